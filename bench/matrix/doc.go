// Package matrix measures how close a client comes to a rate-limited
// server's real speed (issue 14): every client against every server in
// every scenario, one cell each.
//
// A cell sends one batch, Workload.N calls from Workload.Workers
// goroutines, through one client to a fresh server that admits
// Workload.Rate requests per second, and measures what the server saw:
// the 429s, the makespan against the ideal the server's limit allows,
// ((N − burst) / rate, plus the pause when there is one), and for the
// pause scenario what was sent into the pause once the client knew of it
// and how long after the pause's end the call that found it was retried.
//
// Servers are quotatest providers (GCRA, fixed and sliding windows, in
// several header styles) and real server-side limiters over loopback:
// go-chi/httprate, go-redis/redis_rate on a real redis-server, and
// fiber's limiter middleware (fixed and sliding window). Clients are
// headgate's transport and its three adapters, beside the baseline a Go
// user writes without headgate: golang.org/x/time/rate with each
// goroutine sleeping its own Retry-After.
//
// fiber's sliding window is no sliding counter as the matrix mounts it (a
// 1 s window on a whole-second clock weighs the previous window whole, and
// refused requests count: libraries.go). Its rule, transcribed and checked
// against fiber (fiber_rule_test.go), runs in virtual time in the tests,
// which prove what any client can reach on it (fiber_bound_test.go) and
// hold headgate's clients to the configured rate there
// (fiber_virtual_test.go).
//
// On a sliding-window counter no client can beat a bound that depends on
// where in the server's window the batch starts (sliding_bound_test.go):
// such a cell records that phase and its floor from there, a greedy
// client's makespan, within 1 % of that bound (floor.go), and its table
// shows it.
//
// The family (issue 30, family.go) judges a client on servers and
// deployments it has never seen: each run draws them anew from a fresh
// seed — the server's algorithm (quotatest's six), limit, burst and
// window, headers, reset encoding and rounding, Retry-After or not; a wire
// of 0–150 ms each way whose every leg has its own delay; 1–8
// uncoordinated clients on the key; the rate they are configured with
// (exact, 2×, ½, none); callers with deadlines the server's rate meets.
// Every draw runs headgate's transport and the baseline on a fresh server
// in virtual time (RunFamilyDraw); each makespan is measured against the
// greedy ideal, or a proven floor where no client reaches it (the sliding
// counter's; a GCRA's whose tolerance is under the wire's jitter:
// jitterFloor), and the distribution by configured-rate class and sharing
// (RenderFamily) is held to the wants on its 95th percentiles
// (FamilyMisses, TestFamilyWants).
// Draw k of seed s replays alone: go test ./matrix -run 'TestFamily$' -v
// -args -family.seed=s -family.draw=k -family.trace=FILE.
//
// Run runs one cell over loopback or in-process: a quotatest server can
// serve in-process (its Transport), so its cells also run inside a
// testing/synctest bubble, in virtual time, where the figures are exact
// (wants_test.go asserts the wants there). cmd/matrix runs the
// whole matrix over loopback and writes its tables (docs/BENCHMARKS.md).
package matrix
