package retryablehttp

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
)

// CheckRetry returns a retryablehttp.CheckRetry that asks next whether to
// retry (next nil means retryablehttp.DefaultRetryPolicy), with two
// exceptions:
//
//   - a budget error (core.IsBudgetError: the budget refused to wait past the
//     context's deadline) is never retried; it is returned as it is, and Do
//     wraps it in its "giving up" error, where errors.As finds it;
//   - a retry that would wait for a pause ending at or after the context's
//     deadline is not attempted: CheckRetry returns false and core's
//     *core.RateLimitError (it matches context.DeadlineExceeded), which Do
//     returns at once, instead of sleeping until the deadline and returning
//     a bare context error.
//
// The pause is b's, or, when b is not paused, what the response itself asks
// for (read as Backoff reads it). CheckRetry does not close the response body:
// retryablehttp's Do drains and closes it when it gives up, or hands it to the
// client's ErrorHandler, which then owns it. It panics if b is nil (use
// core.Disabled() for no budget).
func CheckRetry(b *core.Budget, next retryablehttp.CheckRetry) retryablehttp.CheckRetry {
	mustBudget("CheckRetry", b)
	return checkRetry(oneBudget(b), next)
}

// checkRetry is CheckRetry with the budget of each request chosen by
// budgetFor.
func checkRetry(budgetFor func(path string) *core.Budget, next retryablehttp.CheckRetry) retryablehttp.CheckRetry {
	if next == nil {
		next = retryablehttp.DefaultRetryPolicy
	}
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if core.IsBudgetError(err) {
			return false, err
		}
		retry, rerr := next(ctx, resp, err)
		if !retry {
			return false, rerr
		}
		path, _ := requestPath(resp, err)
		if lateErr := pastDeadline(ctx, budgetFor(path), resp); lateErr != nil {
			return false, lateErr
		}
		return true, rerr
	}
}

// pastDeadline returns the error of a retry whose wait for b's pause (or,
// when b is not paused, for what resp asks) would end at or after ctx's
// deadline, or nil.
func pastDeadline(ctx context.Context, b *core.Budget, resp *http.Response) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	// now is read before the pause, so now+pause never overestimates the
	// pause's end: when it reaches the deadline, so does the budget's own
	// reckoning below.
	now := time.Now()
	if pause := b.PauseRemaining(); pause > 0 {
		if now.Add(pause).Before(deadline) {
			return nil
		}
		// Check returns core's own error, with the status of the response
		// that paused the budget (which need not be resp), and takes no
		// slot and no turn.
		return b.Check(ctx)
	}
	if resp == nil {
		return nil
	}
	if wait := serverWait(b, resp); wait > 0 && !now.Add(wait).Before(deadline) {
		// The budget is not paused (disabled, or not on this client's
		// transport), so there is no budget error to ask for: this is the
		// one the budget would return, built from what resp asked.
		return &core.RateLimitError{RetryAfter: wait, StatusCode: resp.StatusCode, Reason: core.Paused, Budget: b.Name(), Deadline: deadline}
	}
	return nil
}
