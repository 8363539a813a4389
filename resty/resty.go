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
// It wraps the client's current transport in a core.Transport, so every
// attempt resty makes (every retry and every redirect hop) waits for a slot,
// for any server pause and for its turn, and its response is fed back to the
// budget. It then adds to the client's retry machinery:
//
//   - a retry condition that retries 429 and 503 responses (WithRetryStatuses
//     to change them) and transport errors, as resty does when no condition is
//     set, but never a budget error (core.IsBudgetError) nor an error resty
//     itself marks as not retryable (a failing OnBeforeRequest or
//     OnAfterResponse);
//   - a RetryAfter callback that makes resty wait exactly the budget's
//     remaining pause (the lane's, for a request in a lane), even past
//     RetryMaxWaitTime, and defers to the callback set before Use, or to
//     resty's own backoff, when no pause is active; a pause that outlasts the
//     request context's deadline ends the call at once with core's
//     *core.RateLimitError;
//   - a retry hook that closes the body of every attempt that is followed by
//     another one, and an error hook that closes the body of a response
//     returned with an error, so SetDoNotParseResponse and SetOutput never
//     leak a slot.
//
// Ordering: call Use after configuring the transport (SetTLSClientConfig,
// SetProxy, SetCertificates, SetRootCertificate, SetTransport…): Use wraps
// what is there, and resty's TLS and proxy setters only work on an
// *http.Transport, so once wrapped they log an error and do nothing. Call
// SetRetryCount, SetRetryWaitTime and SetRetryMaxWaitTime before or after:
// Use does not change them, and resty makes no retry until SetRetryCount is
// given a positive count. Do not call SetRetryAfter after Use, which would
// replace the budget's callback. Call Use once per client; several clients
// may share one budget, which is then one quota.
//
// Resty never waits less than RetryWaitTime (100 ms by default), so a pause
// shorter than that is retried RetryWaitTime after it began; lower
// RetryWaitTime for a closer fit.
//
// The budget's wait happens inside the transport and counts against
// SetTimeout (http.Client.Timeout), which bounds each attempt. Resty's wait
// between attempts does not.
//
// Use panics if c or b is nil.
func Use(c *resty.Client, b *core.Budget, opts ...Option) *resty.Client {
	if c == nil {
		panic("headgate: hgresty.Use needs a *resty.Client")
	}
	if b == nil {
		panic("headgate: hgresty.Use needs a budget (use core.Disabled() for none)")
	}
	cfg := newConfig(opts)
	t := core.NewTransport(c.GetClient().Transport, b, cfg.lanes...)
	a := &adapter{
		client:    c,
		transport: t,
		statuses:  cfg.statuses,
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
	statuses  map[int]bool
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
