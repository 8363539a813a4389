package matrix

import (
	"net/http"
	"time"
)

// wire is a network's latency in front of a server: each request reaches
// the server delay after it was sent, and its response the client delay
// after the server answered. In a synctest bubble the delays are virtual,
// so an in-process server shows what a client sees over a real network
// (10-100 ms each way to a public API): the requests it sent after the one
// whose answer it is reading are still on their way.
type wire struct {
	base  http.RoundTripper
	delay time.Duration
}

// withLatency is base behind a wire of delay each way; base itself when
// delay is 0.
func withLatency(base http.RoundTripper, delay time.Duration) http.RoundTripper {
	if delay <= 0 {
		return base
	}
	return wire{base: base, delay: delay}
}

func (w wire) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := sleepCtx(req, w.delay); err != nil {
		return nil, err
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := sleepCtx(req, w.delay); err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// sleepCtx waits d, or until req's context is done.
func sleepCtx(req *http.Request, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-req.Context().Done():
		return req.Context().Err()
	}
}
