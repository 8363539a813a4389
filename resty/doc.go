// Package resty puts a headgate budget on a go-resty/resty/v2 client, so
// every attempt the client makes is paced, capped and fed back to the
// budget, and resty's own retries wait exactly as long as the budget's
// pause. Import it under the alias hgresty:
//
//	import hgresty "github.com/headgate-go/headgate/resty"
//
// # The model
//
// Use wraps the client's transport in a core.Transport: each attempt
// (every retry and every redirect hop) waits for a concurrency slot, for
// any pause the server asked for and for its turn at the budget's pace, and
// its response is fed back to the budget, so one 429 pauses every caller
// sharing the budget at once. A response body holds its slot until it is
// closed.
//
// Use then makes resty's retries agree with the budget: resty waits what
// core.Budget.RetryWait says, the time until the budget lets its next call
// go. After a pause the server stated (a Retry-After of two seconds or
// more, or one finer than a second), that is exactly the time left in it,
// so the retry is sent when the pause ends, first of the callers the budget
// held back (the refused call keeps its place): never before (it would be
// refused again). A whole-second Retry-After may have been rounded up, and
// a refusal may state no wait at all: the budget's estimate of when the
// quota returns then decides, and the retry goes when it says. When the
// budget asks for no wait, a Retry-After it did not act on (core.Disabled)
// is waited, capped; otherwise resty's own backoff (or the RetryAfter
// callback you set before Use) applies. A budget error, raised
// when the pause or the call's turn comes at or after the request context's
// deadline, is never retried: the call fails at once with core's
// *core.RateLimitError, which core.IsBudgetError recognises. It comes as is
// when the call's own response paused the budget, and wrapped in the
// *url.Error of net/http when the transport refused to wait.
//
// # Resty footguns it fixes
//
//   - Resty cuts a RetryAfter wait to RetryMaxWaitTime (2 s by default, and
//     about 2.1 s when negative): a 30 s Retry-After would be retried after 2 s.
//     Use waits the whole pause whatever RetryMaxWaitTime says, which still
//     caps resty's own backoff when no pause is active.
//   - Adding any retry condition turns off resty's retry on transport
//     errors. Use's condition retries them again, as resty does with no
//     condition, and the responses that refuse a call for its rate: 429,
//     503, and a 403 whose headers say the quota is spent.
//   - In SetDoNotParseResponse mode resty never closes the bodies of the
//     attempts it retries, and in SetOutput mode a failing response chain
//     leaves the body open: each would hold a budget slot for ever. Use
//     closes every body resty abandons, and the body of a response returned
//     together with an error (read a body only when the error is nil).
//
// # Ordering
//
// Configure the transport first (SetTLSClientConfig, SetProxy,
// SetCertificates, SetRootCertificate, SetTransport), then call Use: it
// wraps the transport that is there, and resty's TLS and proxy setters only
// work on a bare *http.Transport. Resty makes no retry until SetRetryCount
// is given a positive count; Use leaves the retry count and wait times as
// they are. Do not call SetRetryAfter after Use.
//
// # Quick start
//
//	budget, err := core.NewBudget(core.PerSecond(10), core.WithMaxInFlight(4))
//	if err != nil {
//		return err
//	}
//	client := hgresty.Use(resty.New().SetTLSClientConfig(tlsConfig), budget).
//		SetRetryCount(3)
//
//	resp, err := client.R().SetContext(ctx).Get("https://api.example.com/v1/items")
//	if core.IsBudgetError(err) {
//		// the server's pause outlasts ctx's deadline: not sent (again)
//	}
//
// Several clients spending the same provider quota share one budget; a path
// with a quota of its own gets a lane:
//
//	client := hgresty.Use(resty.New(), budget, core.WithLane("/exports", exportsBudget))
package resty
