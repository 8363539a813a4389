package matrix

import (
	"net/http"
	"sync"
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

// jitterWire is a network where every request and every response takes a
// delay of its own, latency plus up to jitter: the answer to a request
// sent later can come first, and a request sent later can reach the
// server first, as on a real network. A leg's delay is a hash of the
// seed, the call, its try and the leg, not a draw from a shared stream, so
// a call's k-th try is delayed alike whatever order the goroutines of a
// replay run in.
type jitterWire struct {
	base            http.RoundTripper
	latency, jitter time.Duration
	seed            uint64

	mu    sync.Mutex
	tries map[int]int // tries sent so far, by call; guarded by mu
}

func newJitterWire(base http.RoundTripper, latency, jitter time.Duration, seed uint64) *jitterWire {
	return &jitterWire{base: base, latency: latency, jitter: jitter, seed: seed, tries: make(map[int]int)}
}

// delay is the delay of leg (0 out, 1 back) of call's try.
func (w *jitterWire) delay(call, try, leg int) time.Duration {
	if w.jitter <= 0 {
		return w.latency
	}
	h := splitmix(w.seed ^ splitmix(uint64(call)<<20^uint64(try)<<2^uint64(leg)))
	return w.latency + time.Duration(h%uint64(w.jitter+1))
}

func (w *jitterWire) RoundTrip(req *http.Request) (*http.Response, error) {
	call := callOf(req.URL.Path)
	w.mu.Lock()
	try := w.tries[call]
	w.tries[call]++
	w.mu.Unlock()
	if err := sleepCtx(req, w.delay(call, try, 0)); err != nil {
		return nil, err
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := sleepCtx(req, w.delay(call, try, 1)); err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// splitmix is SplitMix64's finaliser: a well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
