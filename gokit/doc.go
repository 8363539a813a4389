// Package gokit spends a headgate budget from go-kit client endpoints: the
// pacing, the concurrency cap and the server's "slow down" of a
// core.Budget, wired into github.com/go-kit/kit (v0.13). Docs and examples
// import it as hgkit:
//
//	import hgkit "github.com/headgate-go/headgate/gokit"
//
// # The model
//
// Every request sent spends one turn from the budget, and every response is
// fed back to it, so a 429 from one endpoint pauses every endpoint sharing
// the budget. There are two ways to wire it; pick one per budget, since
// combining them makes each call spend two turns:
//
//   - The budget's transport under the go-kit HTTP client (SetClient). This
//     is the recommended wiring for HTTP endpoints. Every request sent (each
//     redirect hop, each lb.Retry try) takes its turn, is fed back, and
//     holds its concurrency slot until its body is closed, also with
//     httptransport.BufferedStream. Add nothing else on that budget.
//
//   - A limiter middleware on the endpoint, in go-kit's two forms:
//     NewDelayingLimiter waits for the turn, NewErroringLimiter fails at
//     once with ErrLimited when no turn is free now. Add ClientFeedback to
//     the go-kit HTTP client so the responses reach the budget (or have the
//     decoder return a *ResponseError). Use it to shed load instead of
//     waiting, for non-HTTP transports, or to wait before the request is
//     encoded. The slot is held until the endpoint returns, which with
//     BufferedStream is before the caller closes the stream, and redirect
//     hops are not paced.
//
// Waits honour the context: a call whose turn or server pause comes at or
// after its deadline fails at once with core's *core.RateLimitError and is
// never sent.
//
// # Retries
//
// go-kit retries at the endpoint level, with sd/lb.Retry, and never waits
// between tries; the budget does the waiting. Have the decoder turn a refusal
// (a 429, a 503: CheckResponse) into an error so the retry sees it, and use
// Retry (lb.Retry that stops on a budget refusal, with an error that unwraps
// to core's) or RetryCallback with lb.RetryWithCallback: the next try waits
// for the pause the refusal set and is sent when it ends. With the limiter wiring, put the
// limiter inside lb.Retry, on the endpoints the sd.Factory builds, so each
// try spends its own turn.
//
// # Quick start
//
//	budget := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(4))
//	items := httptransport.NewClient("GET", itemsURL, encode, decode,
//		hgkit.SetClient(nil, budget), // the budget under the client: one turn per request
//	).Endpoint()
//
//	resp, err := items(ctx, request)
//	if core.IsBudgetError(err) {
//		// never sent: the budget's pause or turn comes after ctx's deadline
//	}
//
// The limiter wiring, failing fast instead of waiting:
//
//	items := hgkit.NewErroringLimiter(budget)(
//		httptransport.NewClient("GET", itemsURL, encode, decode,
//			hgkit.ClientFeedback(budget), // responses reach the budget
//		).Endpoint())
//
//	resp, err := items(ctx, request)
//	if errors.Is(err, hgkit.ErrLimited) {
//		// no turn free now; not sent
//	}
package gokit
