package gokit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/kit/endpoint"
	httptransport "github.com/go-kit/kit/transport/http"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgkit "github.com/headgate-go/headgate/gokit"
)

// api is the base URL of the in-process provider; its host is ignored.
const api = "http://api.example"

func encodeNothing(context.Context, *http.Request, interface{}) error { return nil }

// decodeStatus is a typical decoder: a refusal becomes a *ResponseError,
// anything else is read to the end and answered with its status.
func decodeStatus(_ context.Context, resp *http.Response) (interface{}, error) {
	if err := hgkit.CheckResponse(resp); err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, err
	}
	return resp.StatusCode, nil
}

// decodeStream hands the body to the caller, for BufferedStream clients.
func decodeStream(_ context.Context, resp *http.Response) (interface{}, error) {
	if err := hgkit.CheckResponse(resp); err != nil {
		return nil, err
	}
	return resp.Body, nil
}

var errBadPayload = errors.New("bad payload")

// decodeFails fails to decode a successful response, without closing it.
func decodeFails(context.Context, *http.Response) (interface{}, error) {
	return nil, errBadPayload
}

// newClient builds a real go-kit HTTP client endpoint for path.
func newClient(path string, dec httptransport.DecodeResponseFunc, opts ...httptransport.ClientOption) endpoint.Endpoint {
	u, err := url.Parse(api + path)
	if err != nil {
		panic(err)
	}
	return httptransport.NewClient(http.MethodGet, u, encodeNothing, dec, opts...).Endpoint()
}

// A wiring builds a go-kit endpoint for path that sends through rt and
// spends from b.
type wiring struct {
	name  string
	build func(b *core.Budget, rt http.RoundTripper, path string, dec httptransport.DecodeResponseFunc, opts ...httptransport.ClientOption) endpoint.Endpoint
}

// setClient is the recommended wiring: the budget's transport under the
// client, nothing else.
var setClient = wiring{"SetClient", func(b *core.Budget, rt http.RoundTripper, path string, dec httptransport.DecodeResponseFunc, opts ...httptransport.ClientOption) endpoint.Endpoint {
	opts = append([]httptransport.ClientOption{hgkit.SetClient(&http.Client{Transport: rt}, b)}, opts...)
	return newClient(path, dec, opts...)
}}

// delaying is the limiter wiring: the delaying middleware, and
// ClientFeedback on the client.
var delaying = wiring{"DelayingLimiter+ClientFeedback", func(b *core.Budget, rt http.RoundTripper, path string, dec httptransport.DecodeResponseFunc, opts ...httptransport.ClientOption) endpoint.Endpoint {
	opts = append([]httptransport.ClientOption{httptransport.SetClient(&http.Client{Transport: rt}), hgkit.ClientFeedback(b)}, opts...)
	return hgkit.NewDelayingLimiter(b)(newClient(path, dec, opts...))
}}

// erroring is the limiter wiring with the erroring middleware.
var erroring = wiring{"ErroringLimiter+ClientFeedback", func(b *core.Budget, rt http.RoundTripper, path string, dec httptransport.DecodeResponseFunc, opts ...httptransport.ClientOption) endpoint.Endpoint {
	opts = append([]httptransport.ClientOption{httptransport.SetClient(&http.Client{Transport: rt}), hgkit.ClientFeedback(b)}, opts...)
	return hgkit.NewErroringLimiter(b)(newClient(path, dec, opts...))
}}

// decoderOnly is the delaying middleware with no ClientFeedback: refusals
// reach the budget only as the *ResponseError the decoder returns.
var decoderOnly = wiring{"DelayingLimiter+ResponseError", func(b *core.Budget, rt http.RoundTripper, path string, dec httptransport.DecodeResponseFunc, opts ...httptransport.ClientOption) endpoint.Endpoint {
	opts = append([]httptransport.ClientOption{httptransport.SetClient(&http.Client{Transport: rt})}, opts...)
	return hgkit.NewDelayingLimiter(b)(newClient(path, dec, opts...))
}}

// turnCounter is a core.Store that counts the turns it grants: every turn
// any budget built on it spends, whoever takes it (a limiter or the
// transport).
type turnCounter struct {
	core.Store
	turns atomic.Int64
}

func newTurnCounter() *turnCounter { return &turnCounter{Store: core.NewMemoryStore()} }

func (s *turnCounter) Take(ctx context.Context, p core.Pace, maxWait time.Duration) (core.Turn, error) {
	t, err := s.Store.Take(ctx, p, maxWait)
	if err == nil && t.Granted {
		s.turns.Add(1)
	}
	return t, err
}

// bodyTracker is a RoundTripper that records whether every response body it
// returned was closed.
type bodyTracker struct {
	next http.RoundTripper
	mu   sync.Mutex
	open map[*trackedBody]bool
}

func trackBodies(next http.RoundTripper) *bodyTracker {
	return &bodyTracker{next: next, open: map[*trackedBody]bool{}}
}

type trackedBody struct {
	io.ReadCloser
	t *bodyTracker
}

func (b *trackedBody) Close() error {
	b.t.mu.Lock()
	delete(b.t.open, b)
	b.t.mu.Unlock()
	return b.ReadCloser.Close()
}

func (t *bodyTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == http.NoBody {
		return resp, err
	}
	b := &trackedBody{ReadCloser: resp.Body, t: t}
	t.mu.Lock()
	t.open[b] = true
	t.mu.Unlock()
	resp.Body = b
	return resp, nil
}

func (t *bodyTracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// arrivalTimes returns when each request reached the provider.
func arrivalTimes(p *quotatest.Provider) []time.Time {
	var ts []time.Time
	for _, a := range p.Arrivals() {
		ts = append(ts, a.At)
	}
	return ts
}
