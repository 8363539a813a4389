// Package bench holds headgate's side-by-side benchmarks against the
// libraries a Go user would otherwise reach for, measured in one run on one
// machine:
//
//   - BenchmarkAdmit and BenchmarkAdmitParallel: the admit path, a call that
//     is let through without waiting, for headgate's core.Budget
//     (Acquire+Release) beside golang.org/x/time/rate (Wait, Allow),
//     go.uber.org/ratelimit (Take) and failsafe-go's smooth and bursty rate
//     limiters (TryAcquirePermit, AcquirePermit). Every limiter is set to an
//     effectively unlimited rate so that none ever sleeps: the figures are
//     the bookkeeping cost alone, clock reads included.
//     BenchmarkAdmitParallel4x is BenchmarkAdmitParallel from 4×GOMAXPROCS
//     goroutines.
//   - BenchmarkWaiters: 100,000 callers parked on one limiter, headgate
//     beside x/time/rate: the heap they hold, the cost of cancelling them,
//     and how long 100,000 callers at 10⁶/s take to drain.
//   - BenchmarkRedis: a budget in Redis (redisstore) on a redis-server the
//     benchmark starts on loopback, beside go-redis/redis_rate:
//     admissions per second, serially and from 8 goroutines.
//   - BenchmarkParseFeedback: ratelimit.Parse on the responses a client
//     sees most.
//   - BenchmarkTransport: a request through each client (net/http, resty,
//     go-retryablehttp, go-kit) bare and with headgate, over loopback and
//     through an in-process stub, for the overhead per request.
//   - BenchmarkScenario: the demo's batches end to end against a
//     rate-limited quotatest server, reporting 429s/op and makespan/ideal.
//
// Package matrix (and cmd/matrix, which writes its tables) is the feedback
// matrix of issue 14: every headgate client and the x/time/rate baseline
// against quotatest and real server-side limiters (httprate, redis_rate,
// fiber), configured at the exact limit, twice it, half it, or with no
// rate, and through a server pause.
//
// The benchmarks live in _test.go files, so `go test ./...` runs only the
// quick checks that the benchmarks measure what they claim (no limiter ever
// waits on the admit path); `go test -run '^$' -bench .` runs them. The
// report command (go run ./cmd/report) runs them all, writes
// results/latest.txt with the machine, the Go version and the date, and
// turns it into the comparison tables of docs/BENCHMARKS.md and the README's
// summary.
package bench
