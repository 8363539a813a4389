// Package core is headgate's client-side rate budget for Go HTTP clients,
// with no dependency outside the standard library.
//
// Every request a client sends spends from a Budget. It waits for a free
// concurrency slot (WithMaxInFlight), for any pause the server asked for,
// and for its turn at the configured Rate: pacing is GCRA (virtual
// scheduling) and waiters are served in arrival order. The budget reads
// every response (Retry-After, the IETF RateLimit fields, X-RateLimit-*
// and the big providers' variants: see package ratelimit; WithProfile adds
// what only one provider's own headers or body say), so one 429 pauses
// every caller sharing the quota at once. A feedback controller (on by
// default) spends the server's real quota: it learns whether the quota
// refills continuously or in windows, treats whole-second resets as the
// coarse bounds they are, and finds the real limit when the configured one
// is wrong (see Adaptive and NewLearningBudget).
//
// # The pacing bound
//
// The times at which requests are sent satisfy, for every window of length
// W, count ≤ burst + floor(W / interval), where interval is the slowest
// effective interval in force during the window (a lowered rate applies to
// the turns after the change; what could go before it may still go).
// Through a Transport the bound holds for the attempts that reach the wire:
// a request net/http re-sends on its own (a reused connection that failed)
// spends a turn for each attempt.
// Up to Rate.Requests requests (WithBurst to change it) may go back to back
// from an idle budget; after that they are Rate.Interval() apart. A call
// whose turn, or the end of a server pause, comes at or after its context
// deadline does not wait: it gives its turn back and fails at once with a
// *RateLimitError that matches context.DeadlineExceeded.
//
// # Quick start
//
//	budget, err := core.NewBudget(core.PerSecond(10), core.WithMaxInFlight(4))
//	if err != nil {
//		return err
//	}
//	client := &http.Client{Transport: core.NewTransport(nil, budget)}
//	resp, err := client.Get("https://api.example.com/v1/items")
//
// Share one *Budget between every client that spends the same provider
// quota. Give a path its own budget with WithLane. In tests, use
// Disabled() so nothing ever waits, and quotatest for a realistic
// rate-limited server.
//
// Without a transport, call Acquire, send, then Permit.Observe the
// response and Permit.Release the slot when the body is closed. The zero
// Budget is valid and never waits, like Disabled().
//
// ARCHITECTURE.md, beside this file, follows one request through the
// package (Acquire → slot → pause and turn → send → Observe → Release) and
// names the file of each step.
//
// # Several dimensions
//
// LLM providers count tokens per minute beside requests per minute. Declare
// each extra quantity with WithDimension and spend it with AcquireCost:
//
//	budget := core.MustBudget(core.PerMinute(3_500),
//		core.WithDimension("tokens", core.PerMinute(90_000)))
//	p, err := budget.AcquireCost(ctx, core.Cost{Dimension: "tokens", Amount: 4_000})
//	// … send, read usage.total_tokens …
//	p.Commit(core.Cost{Dimension: "tokens", Amount: used})
//	p.Release()
//
// A request reserves its upper bound in every dimension and its turn at
// once, from the one FIFO, and is sent when all of them hold it; Commit
// gives back what it did not use (or charges an overspend, which later
// requests wait out). Every dimension keeps the pacing bound in its units.
// Through a Transport, put the estimate on the request's context with
// WithCost and settle with Commit(resp, …) before closing the body. Under an
// SDK, which reads and closes the body itself, either let the Transport
// read the usage as the body passes (WithUsage: OpenAI's and Anthropic's
// JSON and event streams) or settle after the call returns with the
// Commitment WithCommit gives. With WithStore the dimensions live in the
// store, shared by every budget on it, and Commit settles through it.
//
// # Observability and configuration
//
// Every wait, pushback and rate change is an Event for the observer given
// with WithObserver, called outside the budget's lock. SlogObserver writes
// them to a log/slog logger; Observers combines several observers (the
// telemetry module turns them into OpenTelemetry metrics). Rates read from
// and write to text in the form String prints ("600/min", "5/s",
// "10/100ms"), so they can sit in JSON, YAML or flags (ParseRate,
// Rate.UnmarshalText, Rate.Set); NewBudgetOrDisabled takes the zero Rate
// (an unset config field) as "no limit".
package core
