package retryablehttp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
)

// Backoff returns a retryablehttp.Backoff that waits what
// core.Budget.RetryWait says: the time until b lets its next call go. After
// a pause the server stated, that is exactly the time left in it, so that
// the retry is sent at the instant the pause ends, first of the callers b
// held back (the refused call keeps its place); after a refusal that
// states a whole second, or no wait, it is b's estimate of when the quota
// returns. When b asks for no wait, it returns next's wait; next nil means
// retryablehttp.DefaultBackoff.
//
// A response that asks for a wait itself (Retry-After in any RFC 9110 form,
// retry-after-ms…) that b did not act on (b is disabled, or it never saw the
// response because the client does not send through b's transport) waits what
// core's parser reads, capped at b.MaxPause(). next never sees the
// Retry-After header, so retryablehttp's own parser, which reads neither RFC
// 850 nor asctime dates and caps nothing, is never used; a Retry-After that
// asks for no wait (a date in the past, a bad value) leaves the decision to
// next's backoff.
//
// Backoff has no context: pair it with CheckRetry, which fails fast when the
// pause outlasts the request's deadline. Use installs both. Backoff panics if
// b is nil (use core.Disabled() for no budget).
func Backoff(b *core.Budget, next retryablehttp.Backoff) retryablehttp.Backoff {
	mustBudget("Backoff", b)
	return backoff(oneBudget(b), next)
}

// backoff is Backoff with the budget of each request chosen by budgetFor.
func backoff(budgetFor func(path string) *core.Budget, next retryablehttp.Backoff) retryablehttp.Backoff {
	if next == nil {
		next = retryablehttp.DefaultBackoff
	}
	return func(min, max time.Duration, attemptNum int, resp *http.Response) time.Duration {
		// The transport fed resp to the budget before CheckRetry ran, so the
		// pause already includes what resp asked for. Backoff has no
		// context: CheckRetry has already refused a wait past the deadline.
		path, _ := requestPath(resp, nil)
		if d, _ := budgetFor(path).RetryWait(context.Background(), resp); d > 0 {
			return d
		}
		return next(min, max, attemptNum, withoutRetryAfter(resp))
	}
}

// requestPath returns the URL path of the request behind resp, or else
// behind err (the *url.Error an http.Client returns names the URL), so that
// the right lane's budget can be asked.
func requestPath(resp *http.Response, err error) (string, bool) {
	if resp != nil && resp.Request != nil && resp.Request.URL != nil {
		return resp.Request.URL.Path, true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return u.Path, true
		}
	}
	return "", false
}

// oneBudget chooses b for every request.
func oneBudget(b *core.Budget) func(string) *core.Budget {
	return func(string) *core.Budget { return b }
}

func mustBudget(fn string, b *core.Budget) {
	if b == nil {
		panic("hgretry: " + fn + " needs a budget (core.Disabled() for none)")
	}
}

// withoutRetryAfter returns resp, or a copy of it without the Retry-After
// header when it has one, so that a backoff it is passed to cannot read that
// header with a parser of its own (retryablehttp's reads neither RFC 850 nor
// asctime dates and caps nothing).
func withoutRetryAfter(resp *http.Response) *http.Response {
	if resp == nil || len(resp.Header.Values("Retry-After")) == 0 {
		return resp
	}
	r := *resp
	r.Header = resp.Header.Clone()
	r.Header.Del("Retry-After")
	return &r
}
