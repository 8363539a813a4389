package matrix

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	fiberlimiter "github.com/gofiber/fiber/v2/middleware/limiter"
	"github.com/gofiber/fiber/v2/utils"
)

// fiberRule is fiber v2's sliding-window limiter (middleware/limiter,
// limiter_sliding.go), or its fixed window (limiter_fixed.go: the same
// with no previous window), transcribed for one key, so that it runs in
// virtual time: fiber reads a process-wide whole-second clock that a
// real-time ticker advances (utils.Timestamp), which no synctest bubble
// can drive. TestFiberRuleMatchesFiber checks the transcription against
// fiber itself.
type fiberRule struct {
	max        int    // Config.Max
	expiration uint64 // Config.Expiration in whole seconds, rounded up, at least 1
	fixed      bool   // FixedWindow: a turned window starts empty

	prev, curr int    // hits, refused ones included, in the previous and current window
	end        uint64 // when the current window ends, on fiber's clock; 0: no entry
}

// hit counts one request at fiber's timestamp ts and returns whether it is
// admitted, with the X-RateLimit-Remaining and -Reset (or, refused, the
// Retry-After) fiber answers.
func (r *fiberRule) hit(ts uint64) (admitted bool, remaining int, reset uint64) {
	switch {
	case r.end == 0:
		r.end = ts + r.expiration
	case ts >= r.end && r.fixed:
		r.curr, r.end = 0, ts+r.expiration
	case ts >= r.end:
		if elapsed := ts - r.end; elapsed >= r.expiration {
			r.prev, r.curr, r.end = 0, 0, ts+r.expiration
		} else {
			r.prev, r.curr, r.end = r.curr, 0, ts+r.expiration-elapsed
		}
	}
	r.curr++
	reset = r.end - ts
	weight := float64(reset) / float64(r.expiration)
	remaining = r.max - (int(float64(r.prev)*weight) + r.curr)
	return remaining >= 0, remaining, reset
}

// fiberClock is fiber's timestamp at t: the Unix second of the ticker's
// latest tick, the ticker ticking every second at phase past the second.
func fiberClock(t time.Time, phase time.Duration) uint64 {
	return uint64(t.Add(-phase).Unix())
}

// fiberSlidingRule is the matrix's fiber sliding-window server (Max Rate
// per 1 s Expiration, behind the recorder that plays the pause), served
// in-process on fiberRule, its clock ticking phase past each whole second.
func fiberSlidingRule(phase time.Duration) ServerSpec {
	return fiberRuleServer("fiber sliding-window rule (in-process)", phase, 0, false)
}

// fiberFixedRule is the matrix's fiber fixed-window server, served as
// fiberSlidingRule is; each request reaches it way after it is sent (the
// round trip of a loopback request), so that its window can turn between
// a request's send and its decision.
func fiberFixedRule(phase, way time.Duration) ServerSpec {
	return fiberRuleServer("fiber fixed-window rule (in-process)", phase, way, true)
}

func fiberRuleServer(name string, phase, way time.Duration, fixed bool) ServerSpec {
	return ServerSpec{Name: name, Burst: windowBurst, InProcess: true,
		start: func(e serverEnv) (*Server, error) {
			rec := &recorder{w: e.w, pause: e.pause}
			var mu sync.Mutex
			rule := &fiberRule{max: e.w.Rate, expiration: 1, fixed: fixed}
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(way)
				i, left := rec.arrive(r.URL.Path)
				if left > 0 {
					w.Header().Set("Retry-After", retryAfter(left))
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				mu.Lock()
				ok, remaining, reset := rule.hit(fiberClock(time.Now(), phase))
				mu.Unlock()
				status := http.StatusOK
				if ok {
					rec.admit()
					w.Header().Set("X-RateLimit-Limit", strconv.Itoa(rule.max))
					w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
					w.Header().Set("X-RateLimit-Reset", strconv.FormatUint(reset, 10))
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					_, _ = w.Write(okBody)
				} else {
					status = http.StatusTooManyRequests
					w.Header().Set("Retry-After", strconv.FormatUint(reset, 10))
					w.WriteHeader(status)
				}
				rec.done(i, status)
			})
			return &Server{URL: "http://fiber.invalid", Base: handlerTransport{h}, Arrivals: rec.snapshot, Close: func() {}}, nil
		}}
}

// TestFiberRuleMatchesFiber sends requests one at a time, over loopback,
// to fiber's own sliding-window and fixed-window limiters (Max 5 per 1 s,
// the matrix's setup), spread over a few of their windows, and checks
// that fiberRule, fed fiber's clock as fiber read it, answers each
// exactly as fiber did: status, X-RateLimit-Remaining and -Reset,
// Retry-After.
func TestFiberRuleMatchesFiber(t *testing.T) {
	t.Run("sliding", func(t *testing.T) {
		t.Parallel()
		matchFiber(t, fiberlimiter.SlidingWindow{}, false)
	})
	t.Run("fixed", func(t *testing.T) {
		t.Parallel()
		matchFiber(t, fiberlimiter.FixedWindow{}, true)
	})
}

func matchFiber(t *testing.T, mw fiberlimiter.LimiterHandler, fixed bool) {
	const max = 5
	type seen struct{ before, after uint64 } // fiber's clock around the limiter
	var (
		mu     sync.Mutex
		stamps []seen
	)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		before := uint64(atomic.LoadUint32(&utils.Timestamp))
		err := c.Next()
		mu.Lock()
		stamps = append(stamps, seen{before, uint64(atomic.LoadUint32(&utils.Timestamp))})
		mu.Unlock()
		return err
	})
	app.Use(fiberlimiter.New(fiberlimiter.Config{Max: max, Expiration: time.Second,
		LimiterMiddleware: mw, KeyGenerator: func(*fiber.Ctx) string { return "all" }}))
	app.Get("/*", func(c *fiber.Ctx) error { return c.SendString("ok") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = app.Shutdown() }()
	hc := &http.Client{Timeout: 5 * time.Second}
	rule := &fiberRule{max: max, expiration: 1, fixed: fixed}
	// Bursts of 7 (over the limit), then pauses of varying length: hits in
	// one window, in the next, and after an idle window.
	gaps := []time.Duration{0, 0, 0, 0, 0, 0, 0, 400 * time.Millisecond, 0, 0, 700 * time.Millisecond, 0, 0, 0,
		1200 * time.Millisecond, 0, 0, 0, 0, 0, 0, 2100 * time.Millisecond, 0, 0, 300 * time.Millisecond, 0, 0, 0}
	checked := 0
	for i, gap := range gaps {
		time.Sleep(gap)
		resp, err := hc.Get("http://" + ln.Addr().String() + "/" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		mu.Lock()
		s := stamps[i]
		mu.Unlock()
		// fiber read its clock between before and after: the one of the two
		// whose answer matches (they differ only when its ticker ticked
		// during the request).
		var want string
		matched := false
		for _, ts := range []uint64{s.before, s.after} {
			trial := *rule
			ok, remaining, reset := trial.hit(ts)
			want = fiberAnswer(ok, remaining, reset)
			if want == answerOf(resp) {
				*rule, matched = trial, true
				break
			}
		}
		if !matched {
			t.Fatalf("request %d (fiber's clock %d–%d): fiber answered %s, the rule %s", i, s.before, s.after, answerOf(resp), want)
		}
		checked++
	}
	if checked != len(gaps) {
		t.Fatalf("checked %d of %d", checked, len(gaps))
	}
}

// fiberAnswer is what fiber sends for the rule's decision.
func fiberAnswer(ok bool, remaining int, reset uint64) string {
	if !ok {
		return "429 Retry-After " + strconv.FormatUint(reset, 10)
	}
	return "200 Remaining " + strconv.Itoa(remaining) + " Reset " + strconv.FormatUint(reset, 10)
}

// answerOf is resp in fiberAnswer's form.
func answerOf(resp *http.Response) string {
	if resp.StatusCode != http.StatusOK {
		return strconv.Itoa(resp.StatusCode) + " Retry-After " + resp.Header.Get("Retry-After")
	}
	return "200 Remaining " + resp.Header.Get("X-RateLimit-Remaining") + " Reset " + resp.Header.Get("X-RateLimit-Reset")
}
