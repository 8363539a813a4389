package matrix

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/httprate"
	"github.com/go-redis/redis_rate/v10"
	"github.com/gofiber/fiber/v2"
	fiberlimiter "github.com/gofiber/fiber/v2/middleware/limiter"
	"github.com/redis/go-redis/v9"
)

// The real server-side limiters, each as its documentation sets it up, all
// callers under one key (the batch is one client).

// httprateServer is go-chi/httprate's sliding-window counter, Rate per
// second: X-RateLimit-Limit, -Remaining and -Reset (the window's end as a
// Unix second, rounded down) on every response, and on a 429 Retry-After:
// the whole window length. Its windows (v0.16) start at the instant its
// limiter is built, not on the second.
var httprateServer = ServerSpec{Name: "go-chi/httprate · sliding window", Burst: windowBurst,
	start: func(e serverEnv) (*Server, error) {
		built := time.Now() // its windows' origin, within the microseconds LimitBy takes
		s, err := netHTTPServer(e, httprate.LimitBy(e.w.Rate, time.Second, httprate.Key("*")), nil)
		if err == nil {
			s.Sliding = &slidingWindows{origin: built, length: time.Second, rounds: true}
		}
		return s, err
	}}

// redisRateServer is go-redis/redis_rate's GCRA on a real Redis, Rate per
// second with the workload's burst, behind the small middleware a user
// writes to send its Result: X-RateLimit-Limit (the burst),
// X-RateLimit-Remaining, X-RateLimit-Reset (ResetAfter in whole seconds,
// rounded up) and, on a 429, Retry-After (RetryAfter, rounded up).
var redisRateServer = ServerSpec{Name: "go-redis/redis_rate · GCRA on Redis", Burst: gcraBurst,
	start: func(e serverEnv) (*Server, error) {
		if e.redisAddr == "" {
			return nil, errNoRedis
		}
		rdb := redis.NewClient(&redis.Options{Addr: e.redisAddr, PoolSize: e.w.Workers})
		lim := redis_rate.NewLimiter(rdb)
		limit := redis_rate.Limit{Rate: e.w.Rate, Burst: e.w.Burst, Period: time.Second}
		mw := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := ctxTimeout(r)
				res, err := lim.Allow(ctx, e.key, limit)
				cancel()
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				h := w.Header()
				h.Set("X-RateLimit-Limit", strconv.Itoa(limit.Burst))
				h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
				h.Set("X-RateLimit-Reset", ceilSeconds(res.ResetAfter))
				if res.Allowed == 0 {
					h.Set("Retry-After", ceilSeconds(res.RetryAfter))
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				next.ServeHTTP(w, r)
			})
		}
		return netHTTPServer(e, mw, func() { _ = rdb.Close() })
	}}

// ceilSeconds is d in whole seconds, rounded up, at least 0.
func ceilSeconds(d time.Duration) string {
	return strconv.FormatInt(int64((max(0, d)+time.Second-1)/time.Second), 10)
}

// fiberServer is gofiber/fiber's limiter middleware, Max Rate per 1 s
// Expiration, fixed or sliding window (its windows start at the key's
// first request and tick on fiber's whole-second clock): X-RateLimit-Limit,
// -Remaining and -Reset (seconds left in the window) on admitted
// responses, Retry-After (the same seconds) on a 429.
//
// Its sliding window (v2.52, limiter_sliding.go), as the matrix sets it:
//   - Clock: a process-wide Unix second (utils.Timestamp) that a ticker
//     started with the first limiter advances once a second, at that
//     ticker's phase, not the second's. Windows turn when it ticks.
//   - Count: every request is a hit, refused ones too (Max minus hits is
//     never given back). A request is admitted iff
//     int(prev × weight) + curr ≤ Max, curr counting it, where weight is
//     (seconds left in the window) ÷ Expiration in whole seconds: with a
//     1 s Expiration always 1. So the previous window counts whole: a
//     window admits Max minus every hit of the one before, and a window
//     with no hits wipes both.
//   - Answers: admitted, X-RateLimit-Limit Max, -Remaining
//     Max − (prev + curr), -Reset 1; refused, a 429 with only
//     "Retry-After: 1" — true of the window, not of the quota, which comes
//     back only after a window with no hits. Until window 1, its answers
//     are a fixed window's to the byte.
//
// fiber_rule_test.go transcribes the rule (fiberRule) and checks it against
// fiber; fiber_bound_test.go shows what any client can reach on it: 2.00×
// the ideal (1.75–2.00× over loopback), 2.25× for a client that does not
// know the rule before window 1.
func fiberServer(name string, sliding bool) ServerSpec {
	return ServerSpec{Name: name, Burst: windowBurst, start: func(e serverEnv) (*Server, error) {
		if e.inProcess {
			return nil, errors.New("matrix: fiber runs over loopback only")
		}
		var mw fiberlimiter.LimiterHandler = fiberlimiter.FixedWindow{}
		if sliding {
			mw = fiberlimiter.SlidingWindow{}
		}
		rec := &recorder{w: e.w, pause: e.pause}
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		app.Use(func(c *fiber.Ctx) error {
			i, left := rec.arrive(c.Path())
			if left > 0 {
				c.Set("Retry-After", retryAfter(left))
				return c.SendStatus(http.StatusTooManyRequests)
			}
			err := c.Next()
			rec.done(i, c.Response().StatusCode())
			return err
		})
		app.Use(fiberlimiter.New(fiberlimiter.Config{
			Max: e.w.Rate, Expiration: time.Second, LimiterMiddleware: mw,
			KeyGenerator: func(*fiber.Ctx) string { return "all" },
		}))
		app.Get("/v1/items/:id", func(c *fiber.Ctx) error {
			rec.admit()
			c.Set("Content-Type", "application/json")
			return c.Send(okBody)
		})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = app.Listener(ln)
		}()
		pool := loopbackPool(e.w)
		return &Server{URL: "http://" + ln.Addr().String(), Base: pool, Arrivals: rec.snapshot, Close: func() {
			pool.CloseIdleConnections()
			// Shutdown does nothing to a server whose Listener has not begun
			// to serve yet; closing the listener ends it either way.
			_ = app.ShutdownWithTimeout(5 * time.Second)
			_ = ln.Close()
			<-served
		}}, nil
	}}
}
