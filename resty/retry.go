package resty

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/ratelimit"
)

// errNoRetry stops resty's retry loop from the RetryAfter callback. It is
// returned only when the attempt already failed with an error, which resty
// then returns instead (retry.go: "if err == nil { err = err2 }"), so
// callers never see it.
var errNoRetry = errors.New("headgate: hgresty: not retried")

// retryCondition retries refusals (refused) and transport errors, never a
// budget error.
//
// Resty overwrites its own decision with each condition's, so any condition
// a user adds turns off its default retry on transport errors; this one
// restores it. Resty hands conditions the error without its "do not retry"
// mark, so an error from OnBeforeRequest (no response) is told apart here,
// and an error from the response chain (a failing OnAfterResponse, a body
// that does not decode) in onRetry, which sees the marked error.
func (a *adapter) retryCondition(r *resty.Response, err error) bool {
	if err != nil {
		if r == nil || core.IsBudgetError(err) {
			return false
		}
		a.load(r.Request).seen = err
		return true
	}
	return r != nil && r.RawResponse != nil && refused(r.RawResponse)
}

// refused reports whether a response refuses the call for its rate, so a
// retry may succeed: a 429, a 503, or a 403 whose headers say the quota is
// spent (GitHub's over-limit answer; ratelimit.Parse decides).
func refused(r *http.Response) bool {
	switch r.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	case http.StatusForbidden:
		return ratelimit.Parse(r.StatusCode, r.Header, time.Now()).Exhausted
	}
	return false
}

// onRetry runs for every attempt some condition asked to retry, before
// resty computes the wait. It vetoes retrying a budget error, or an error
// resty marked as not retryable that only this adapter's condition asked to
// retry, and closes the body of an attempt another one will follow, which
// resty never does in SetDoNotParseResponse mode (a leaked slot otherwise).
func (a *adapter) onRetry(r *resty.Response, err error) {
	if r == nil || r.Request == nil {
		return
	}
	st := a.take(r.Request)
	last := r.Request.Attempt > a.client.RetryCount // resty stops after this attempt
	if !last {
		closeBody(r)
		if core.IsBudgetError(err) || (st.seen != nil && err != st.seen) {
			a.state.Store(r.Request, &attemptState{veto: true})
		}
	}
}

// retryAfter is resty's RetryAfter callback: the wait before the next
// attempt is what core.Budget.RetryWait says for the budget the request
// spends from — the time until it lets its next call go, or what the
// response asks when the budget does not read its responses — and a wait
// past the request's deadline ends the call at once with core's error.
//
// Resty clamps the callback's wait to [RetryWaitTime, RetryMaxWaitTime]
// (2 s by default), so a 30 s Retry-After would be cut to 2 s: the next
// attempt would then wait inside the transport, against SetTimeout, after
// running OnBeforeRequest 28 s early. Instead, the part of the wait above
// what resty will wait is slept here, on the request's goroutine and bound
// by its context, and the rest is returned, so resty's wait ends exactly
// when the pause does.
func (a *adapter) retryAfter(c *resty.Client, r *resty.Response) (time.Duration, error) {
	if a.take(r.Request).veto {
		return 0, errNoRetry
	}
	ctx := r.Request.Context()
	b := a.pausedBudget(r)
	wait, err := b.RetryWait(ctx, r.RawResponse)
	if err != nil {
		return 0, err
	}
	if wait <= 0 {
		if a.prev != nil {
			return a.prev(c, r)
		}
		return 0, nil // resty's own backoff
	}
	_, hi := waitRange(c.RetryWaitTime, c.RetryMaxWaitTime)
	end := time.Now().Add(wait)
	for wait > hi {
		if err := sleep(ctx, wait-hi); err != nil {
			return 0, err
		}
		// Measure again: the pause may have been extended meanwhile (a
		// later, longer pause; a shorter one never shortens it), maybe past
		// the deadline. A wait only the response asked for keeps its end.
		pause, err := b.RetryWait(ctx, nil)
		if err != nil {
			return 0, err
		}
		if wait = max(pause, time.Until(end)); wait <= 0 {
			return time.Nanosecond, nil // resty raises it to RetryWaitTime
		}
	}
	return wait, nil
}

// pausedBudget returns the budget whose pause holds the request's next
// attempt back: the budget of the lane of the request's URL, or, when a
// redirect led the attempt into another lane, whichever of the two is
// paused longer (the next attempt goes through both).
func (a *adapter) pausedBudget(r *resty.Response) *core.Budget {
	b := a.transport.Budget()
	if rr := r.Request.RawRequest; rr != nil && rr.URL != nil {
		b = a.transport.BudgetFor(rr.URL.Path)
	}
	if r.RawResponse != nil && r.RawResponse.Request != nil && r.RawResponse.Request.URL != nil {
		if hop := a.transport.BudgetFor(r.RawResponse.Request.URL.Path); hop != b && hop.PauseRemaining() > b.PauseRemaining() {
			return hop
		}
	}
	return b
}

// waitRange returns the shortest and the longest wait resty's sleepDuration
// (retry.go) turns a positive callback result into: it raises the result to
// RetryWaitTime and cuts it to RetryMaxWaitTime (taken as 1<<31-1 ns when
// negative), in that order, so the floor wins when the two cross.
func waitRange(minWait, maxWait time.Duration) (lo, hi time.Duration) {
	const restyMaxInt = 1<<31 - 1
	if maxWait < 0 {
		maxWait = restyMaxInt
	}
	lo = max(minWait, 0)
	return lo, max(maxWait, lo)
}

// sleep waits d, or until ctx is done, whose error it then returns.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
