// Package retryablehttp makes a github.com/hashicorp/go-retryablehttp client
// spend from a headgate budget, so that its retries and the budget's pauses
// end together. Import it as hgretry:
//
//	import (
//		"github.com/hashicorp/go-retryablehttp"
//		"github.com/headgate-go/headgate/core"
//		hgretry "github.com/headgate-go/headgate/retryablehttp"
//	)
//
// # The model
//
// Use installs three things on a *retryablehttp.Client:
//
//   - core's budget Transport on c.HTTPClient.Transport, inside the retry
//     loop, so every attempt (the first, every retry, every redirect hop)
//     waits for a slot, for any server pause and for its turn, and its
//     response is fed back to the budget. retryablehttp drains and closes the
//     body of every response it retries or gives up on, so no attempt keeps
//     its slot; the caller closes the body of the response Do returns.
//   - Backoff: the retry waits what core.Budget.RetryWait says, the time
//     until the budget lets its next call go. When the budget is paused (a
//     429 or 503 whose Retry-After states two seconds or more, or a finer
//     wait, seen by this request or by any other caller sharing the
//     budget), that is exactly the time left in the pause, so the retry is
//     sent when the pause ends, first of the callers the budget held back;
//     never before. After a whole-second Retry-After, which may have been
//     rounded up, or a refusal stating no wait, it is the budget's estimate
//     of when the quota returns. When the budget asks for no wait, the
//     client's own backoff decides, except that a Retry-After is read by
//     core's parser (every RFC 9110 form, capped), never by retryablehttp's.
//   - CheckRetry: a budget error (core.IsBudgetError) is never retried, and a
//     retry whose wait would end at or after the request context's deadline
//     is not attempted: Do fails at once with core's *core.RateLimitError
//     instead of sleeping until the deadline and returning a bare context
//     error.
//
// Backoff and CheckRetry are also exported as decorators in
// go-retryablehttp's own style, for clients that set their policies by hand.
//
// # Quick start
//
//	budget, err := core.NewBudget(core.PerSecond(10), core.WithMaxInFlight(4))
//	if err != nil {
//		return err
//	}
//	client := hgretry.Use(retryablehttp.NewClient(), budget)
//	resp, err := client.Get("https://api.example.com/v1/items")
//	if core.IsBudgetError(err) {
//		// the server's pause ends after the context's deadline: not retried
//	}
//
// The StandardClient form is paced too, attempt by attempt, because the
// budget sits under the retry loop:
//
//	std := hgretry.Use(retryablehttp.NewClient(), budget).StandardClient()
//
// Give a path its own budget with core.WithLane; Backoff and CheckRetry then
// read the pause of the lane the request spent from:
//
//	client := hgretry.Use(retryablehttp.NewClient(), budget,
//		core.WithLane("/exports", exportsBudget))
//
// # What go-retryablehttp does on its own, and what changes
//
// go-retryablehttp v0.7.8's DefaultBackoff reads Retry-After only as integer
// seconds or an RFC 1123 date (so RFC 850 and asctime dates, which RFC 9110
// requires recipients to accept, fall back to exponential backoff), and it
// returns the value uncapped: a Retry-After of 484289 hours is a 484289-hour
// sleep. Its Do loop sleeps the whole backoff even when the context's deadline
// comes first, then returns the bare context error. With Use, a pause is
// capped by the budget (core.WithMaxPause, one hour by default), every form is
// read, and a pause past the deadline fails fast with core's error.
//
// Not changed: a plain exponential backoff (no pause, no Retry-After) longer
// than the time left before the deadline still sleeps until the deadline,
// because CheckRetry is not told the attempt number that backoff depends on.
// The budget's wait inside the transport counts against c.HTTPClient.Timeout
// (zero, no timeout, in retryablehttp.NewClient), like any time spent in a
// RoundTripper.
package retryablehttp
