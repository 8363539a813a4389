package retryablehttp

import (
	"context"
	"net/http"

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
//     *core.RateLimitError (the one core.Budget.RetryWait returns), which Do
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
		// The wait Backoff will choose, measured against the deadline.
		path, _ := requestPath(resp, err)
		if _, lateErr := budgetFor(path).RetryWait(ctx, resp); lateErr != nil {
			return false, lateErr
		}
		return true, rerr
	}
}
