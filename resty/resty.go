package resty

import (
	"errors"
	"io"
	"sync"

	"github.com/go-resty/resty/v2"

	"github.com/headgate-go/headgate/core"
)

// Use installs budget b on client c and returns c, for chaining.
//
// It wraps the client's current transport in a core.Transport built with
// opts (core.WithLane gives a path a budget of its own), so every attempt
// (every retry, every redirect hop) is paced, capped and fed back to the
// budget, and adds a retry condition (429, 503, and a 403 whose headers say
// the quota is spent; transport errors; never a budget error), a RetryAfter
// callback that waits what core.Budget.RetryWait says (the budget's wait,
// even past RetryMaxWaitTime, or resty's own backoff when it asks none),
// and hooks that close every body resty abandons. The package comment
// tells the model.
//
// Call Use after configuring the transport (SetTransport, SetProxy,
// SetTLSClientConfig…: once wrapped, resty's TLS and proxy setters do
// nothing) and never call SetRetryAfter after it. Resty retries only once
// SetRetryCount is positive. The budget's wait counts against SetTimeout.
//
// c nil means resty.New(). Use panics if b is nil (core.Disabled() for no
// budget), or if c already sends through a core.Transport on b, where every
// attempt would take two turns.
func Use(c *resty.Client, b *core.Budget, opts ...core.TransportOption) *resty.Client {
	if b == nil {
		panic("hgresty: Use needs a budget (core.Disabled() for none)")
	}
	if c == nil {
		c = resty.New()
	}
	if t, ok := c.GetClient().Transport.(*core.Transport); ok && t.Budget() == b {
		panic("hgresty: Use: the client already sends through a transport on this budget (every attempt would take two turns)")
	}
	t := core.NewTransport(c.GetClient().Transport, b, opts...)
	a := &adapter{
		client:    c,
		transport: t,
		prev:      c.RetryAfter,
	}
	c.SetTransport(t).
		AddRetryCondition(a.retryCondition).
		AddRetryHook(a.onRetry).
		SetRetryAfter(a.retryAfter).
		OnError(a.onError).
		OnPanic(a.onPanic)
	return c
}

// adapter holds what Use installed on one client.
type adapter struct {
	client    *resty.Client
	transport *core.Transport
	prev      resty.RetryAfterFunc // the callback set before Use, or nil

	// state carries what the retry condition and the retry hook learned
	// about a request's last attempt to the RetryAfter callback, which only
	// sees the response. Resty runs the three in that order, on the
	// request's goroutine, within one attempt; entries are removed by the
	// callback, or at the end of Execute on the error and panic paths.
	state sync.Map // *resty.Request → *attemptState
}

// attemptState is what the adapter knows of a request's last attempt.
type attemptState struct {
	// seen is the error the retry condition was given (resty hands
	// conditions the error with its "do not retry" mark removed) when it
	// asked for a retry because of it.
	seen error
	// veto: the attempt must not be retried, whatever a condition said.
	veto bool
}

func (a *adapter) load(r *resty.Request) *attemptState {
	v, _ := a.state.LoadOrStore(r, &attemptState{})
	return v.(*attemptState)
}

func (a *adapter) take(r *resty.Request) *attemptState {
	if v, ok := a.state.LoadAndDelete(r); ok {
		return v.(*attemptState)
	}
	return &attemptState{}
}

// onError runs once at the end of an Execute that failed: it closes the
// body of the response returned with the error (resty leaves it open in
// SetDoNotParseResponse mode, and in SetOutput mode when the response chain
// stops before the file is written), and forgets the request.
func (a *adapter) onError(r *resty.Request, err error) {
	a.state.Delete(r)
	var re *resty.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		closeBody(re.Response)
	}
}

func (a *adapter) onPanic(r *resty.Request, _ error) { a.state.Delete(r) }

// drainLimit is how much of an abandoned body is read before it is closed,
// so a small error body does not cost its keep-alive connection.
const drainLimit = 4 << 10

// closeBody drains a little of the response body and closes it, which frees
// the budget slot it holds. Closing a body resty already closed does
// nothing.
func closeBody(r *resty.Response) {
	if r == nil || r.RawResponse == nil || r.RawResponse.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, r.RawResponse.Body, drainLimit)
	_ = r.RawResponse.Body.Close()
}
