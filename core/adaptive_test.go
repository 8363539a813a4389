package core

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder collects a budget's events.
type recorder struct {
	mu  sync.Mutex
	evs []Event
}

func (r *recorder) observe(e Event) { r.mu.Lock(); r.evs = append(r.evs, e); r.mu.Unlock() }

func (r *recorder) count(reason Reason) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

func (r *recorder) of(reason Reason) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.evs {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func retryAfter(s int) http.Header { return http.Header{"Retry-After": {strconv.Itoa(s)}} }

// overPace is a refusal that shows the pace above the server's: the quota is
// not whole when the wait ends (its reset comes later).
var overPace = http.Header{"Retry-After": {"2"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"5"}}

func TestFiftyConcurrent429sGiveOneDecreaseOnePauseFiftyPushbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustBudget(PerSecond(100), WithObserver(rec.observe))
		permits := make([]Permit, 50)
		for i := range permits {
			permits[i], _ = b.Acquire(context.Background()) // all within the burst, at t=0
		}
		time.Sleep(100 * time.Millisecond) // the responses come back
		var wg sync.WaitGroup
		for i := range permits {
			// The quota is not whole when the wait ends: the pace was above the server's.
			wg.Go(func() { permits[i].Observe(http.StatusTooManyRequests, overPace) })
		}
		wg.Wait()
		if got := b.EffectiveRate(); got != (Rate{100, 2 * time.Second}) {
			t.Fatalf("after 50 concurrent 429s EffectiveRate = %v, want 100/2s (one decrease)", got)
		}
		// One hold: a probe goes at the next turn of the halved pace.
		if got := b.PauseRemaining(); got != 20*time.Millisecond {
			t.Fatalf("PauseRemaining = %v, want 20ms (one hold, until the probe)", got)
		}
		if n := rec.count(Pushback); n != 50 {
			t.Fatalf("%d Pushback events, want 50", n)
		}
		if ch := rec.of(RateChanged); len(ch) != 1 || ch[0].OldRate != 100 || ch[0].NewRate != 50 || ch[0].Status != 429 {
			t.Fatalf("RateChanged events %+v, want one 100 → 50 after a 429", ch)
		}
		// A request sent after the decrease that is refused too decreases again.
		p, _ := b.Acquire(context.Background()) // the probe, at 20ms
		p.Observe(http.StatusTooManyRequests, nil)
		if got := b.EffectiveRate(); got != (Rate{100, 4 * time.Second}) {
			t.Fatalf("a 429 to a request sent after the decrease: EffectiveRate = %v, want 100/4s", got)
		}
	})
}

// Recovery follows CUBIC: from the cut (×0.5) it climbs fast at first and
// flattens as it nears the rate that drew the refusal, which it reaches
// after the time a linear recovery at Increase per second would take (5 s).
func TestSuccessesRestoreConfiguredRateAlongCubic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustBudget(PerSecond(10), WithObserver(rec.observe))
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusServiceUnavailable, nil) // 503: ×0.5
		if got := b.EffectiveRate(); got != (Rate{10, 2 * time.Second}) {
			t.Fatalf("after a 503 EffectiveRate = %v, want 10/2s", got)
		}
		// W(t) = 1 + 0.5·(t−5)³/125 of the configured 10/s.
		want := []float64{6.355, 7.44, 8.285, 8.92, 9.375, 9.68, 9.865, 9.96, 9.995, 10}
		for i := range 10 {
			time.Sleep(500 * time.Millisecond)
			p, _ := b.Acquire(context.Background())
			p.Observe(http.StatusOK, nil)
			if got := b.EffectiveRate().PerSecondFloat(); got < want[i]-0.01 || got > want[i]+0.01 {
				t.Fatalf("step %d: after %v of successes the rate is %.3f/s, want %.2f/s", i, time.Duration(i+1)*500*time.Millisecond, got, want[i])
			}
		}
		if got := b.EffectiveRate(); got != PerSecond(10) {
			t.Fatalf("after 5 s of successes EffectiveRate = %v, want the configured 10/s", got)
		}
		// Quick toward the last good rate, careful near the one that failed:
		// the first second regains more than the last.
		if first, last := want[1]-5, want[9]-want[7]; first <= 4*last {
			t.Fatalf("the curve is not concave: +%.2f in the first second, +%.2f in the last", first, last)
		}
		if ch := rec.of(RateChanged); len(ch) != 2 || ch[1].NewRate != 10 {
			t.Fatalf("RateChanged events %+v, want the decrease and the full recovery", ch)
		}
	})
}

func TestServerErrorsChangeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10))
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusTooManyRequests, nil)
		for _, status := range []int{500, 502, 504} {
			time.Sleep(time.Second)
			p, _ := b.Acquire(context.Background())
			p.Observe(status, nil)
		}
		if got := b.EffectiveRate(); got != (Rate{10, 2 * time.Second}) {
			t.Fatalf("after 500/502/504 EffectiveRate = %v, want still 10/2s", got)
		}
		b2 := MustBudget(PerSecond(10))
		p, _ = b2.Acquire(context.Background())
		p.Observe(500, nil)
		if got := b2.EffectiveRate(); got != PerSecond(10) || b2.PauseRemaining() != 0 {
			t.Fatalf("a 500 changed the budget: %v, pause %v", got, b2.PauseRemaining())
		}
	})
}

func TestWithoutAdaptiveKeepsConfiguredRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithoutAdaptive())
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusTooManyRequests, overPace)
		if got := b.EffectiveRate(); got != PerSecond(10) {
			t.Fatalf("WithoutAdaptive: EffectiveRate = %v after a 429, want 10/s", got)
		}
		p.Observe(http.StatusTooManyRequests, retryAfter(3))
		if b.PauseRemaining() != 3*time.Second {
			t.Fatal("WithoutAdaptive must still honour the pause")
		}
	})
}

func TestPausePausesEveryQueuedAndLaterCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustBudget(Rate{5, time.Second}, WithoutAdaptive(), WithObserver(rec.observe))
		start := time.Now()
		var permits []Permit
		for range 5 {
			p, _ := b.Acquire(context.Background())
			permits = append(permits, p)
		}
		// Five callers queue for turns at 200, 400 … 1000 ms.
		sends := make([]time.Duration, 5)
		var wg sync.WaitGroup
		for i := range sends {
			wg.Go(func() {
				if _, err := b.Acquire(context.Background()); err != nil {
					t.Error(err)
				}
				sends[i] = time.Since(start)
			})
			synctest.Wait()
		}
		time.Sleep(100 * time.Millisecond)
		permits[0].Observe(http.StatusTooManyRequests, retryAfter(3)) // pause until 3.1 s
		// A later, shorter pause never shortens it.
		permits[1].Observe(http.StatusTooManyRequests, retryAfter(1))
		if got := b.PauseRemaining(); got != 3*time.Second {
			t.Fatalf("PauseRemaining = %v after a 3s and a 1s pause, want 3s", got)
		}
		wg.Wait()
		// Nobody went during the pause; the 429 named no quota, so when the
		// pause ends the burst goes at once: the queued callers in order.
		for i, s := range sends {
			if s != 3100*time.Millisecond {
				t.Fatalf("queued caller %d sent at %v, want 3.1s (the end of the pause): sends %v", i, s, sends)
			}
		}
		if n := rec.count(Paused); n != 5 {
			t.Fatalf("%d Paused wait events, want 5", n)
		}
	})
}

func TestPauseShorterThanTheResetEndsWithOneRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{10, time.Second}, WithoutAdaptive())
		p, _ := b.Acquire(context.Background())
		// A GCRA server: the next request in 1 s, the quota of 5 whole in 3 s.
		p.Observe(http.StatusTooManyRequests, http.Header{
			"Retry-After": {"1"}, "X-Ratelimit-Limit": {"5"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"3"},
		})
		// "1" second may mean 10 ms: one probe goes at the next paced turn;
		// with no answer, the others wait for the whole second, then the
		// quota's pace (what remains of 5 spread until the reset).
		sends := sendTimes(t, b, 3)
		sortDurations(sends)
		if want := []time.Duration{100 * time.Millisecond, time.Second, 1400 * time.Millisecond}; !slices.Equal(sends, want) {
			t.Fatalf("sends %v, want %v: a probe, then one at the end of the hold, then the pace", sends, want)
		}
	})
}

func TestPauseEndsWithNoMoreAtOnceThanTheServerHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{10, time.Second}, WithoutAdaptive())
		p, _ := b.Acquire(context.Background())
		// The server says: quota of 3, spent, back in 2 s.
		p.Observe(http.StatusTooManyRequests, http.Header{
			"Retry-After": {"2"}, "X-Ratelimit-Limit": {"3"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"2"},
		})
		sends := sendTimes(t, b, 5)
		sortDurations(sends)
		want := []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2100 * time.Millisecond, 2200 * time.Millisecond}
		for i := range want {
			if sends[i] != want[i] {
				t.Fatalf("sends after a pause with Limit 3: %v, want %v", sends, want)
			}
		}
	})
}

func TestPausePastDeadlineFailsAtOnceWithStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		start := func(*testing.T) time.Time { return t0 }
		b := MustBudget(PerSecond(10))
		p, _ := b.Acquire(context.Background())
		// A 200 whose headers say the quota is spent until 30 s from now.
		p.Observe(http.StatusOK, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"30"}})
		// Whether it returns sooner is not known: one probe goes at the
		// next turn, and the others are held until its answer or the reset.
		if _, err := b.Acquire(context.Background()); err != nil || time.Since(start(t)) != 100*time.Millisecond {
			t.Fatalf("the probe: %v at %v, want it at the next turn (100ms)", err, time.Since(start(t)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		begin := time.Now()
		_, err := b.Acquire(ctx)
		var rl *RateLimitError
		if !errors.As(err, &rl) || !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) != 0 {
			t.Fatalf("err = %v after %v, want a RateLimitError at once", err, time.Since(begin))
		}
		if rl.StatusCode != 200 || rl.RetryAfter != 29900*time.Millisecond || !rl.Retryable() || rl.Reason != Paused {
			t.Fatalf("err = %+v, want StatusCode 200, RetryAfter 29.9s, retryable, paused", rl)
		}
	})
}

func TestPauseFailsQueuedCallerWhoseDeadlineItOutlasts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second}, WithoutAdaptive())
		p, _ := b.Acquire(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		errc := make(chan error)
		go func() { _, err := b.Acquire(ctx); errc <- err }() // queued for 1 s
		synctest.Wait()
		start := time.Now()
		p.Observe(http.StatusServiceUnavailable, retryAfter(10))
		err := <-errc
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.StatusCode != 503 || time.Since(start) != 0 {
			t.Fatalf("queued caller: err %v after %v, want a RateLimitError with 503 at once", err, time.Since(start))
		}
	})
}

func TestDisabledBudgetIgnoresPausesButReportsPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := mustDisabled(t, WithObserver(rec.observe))
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusTooManyRequests, retryAfter(30))
		start := time.Now()
		if _, err := b.Acquire(context.Background()); err != nil || time.Since(start) != 0 || b.PauseRemaining() != 0 {
			t.Fatalf("disabled budget paused: err %v, waited %v", err, time.Since(start))
		}
		if rec.count(Pushback) != 1 {
			t.Fatalf("disabled budget reported %d Pushback events, want 1", rec.count(Pushback))
		}
	})
}

func TestThrottledWaitsAreReportedAsThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := MustBudget(Rate{1, time.Second}, WithObserver(rec.observe))
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusTooManyRequests, nil) // factor 0.5: 1 per 2 s
		b.Acquire(context.Background())
		th := rec.of(Throttled)
		if len(th) != 1 || th[0].Wait != 2*time.Second {
			t.Fatalf("Throttled events %+v, want one wait of 2s", th)
		}
	})
}

func TestRemainingAndResetShapeThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Configured at 100/s, the server reports 4 left of a quota of 10 that
		// is whole again in 10 s (whole seconds, rounded up: at the earliest
		// 9 s). The budget sends no more than the 4 left at once and plans the
		// quota no faster than it returns: 10 per 9 s.
		b := MustBudget(PerSecond(100), WithoutAdaptive())
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusOK, http.Header{"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"4"}, "X-Ratelimit-Reset": {"10"}})
		if got := b.EffectiveRate(); got != (Rate{100, 90 * time.Second}) {
			t.Fatalf("EffectiveRate %v while the report holds, want 100/1m30s (1 per 900ms)", got)
		}
		sends := sendTimes(t, b, 6)
		sortDurations(sends)
		want := []time.Duration{0, 0, 0, 0, 900 * time.Millisecond, 1800 * time.Millisecond}
		for i := range want {
			if sends[i] != want[i] {
				t.Fatalf("sends %v, want %v", sends, want)
			}
		}
		// When the reset has passed, the configured pace is back.
		time.Sleep(10 * time.Second)
		if got := b.EffectiveRate(); got != PerSecond(100) {
			t.Fatalf("EffectiveRate %v after the reset, want 100/s", got)
		}
	})
}

func TestWaitersAreRetimedWhenAQuotaReportRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 2 of 2 left, whole again in 10 s: 2 at once, then one per 4.5 s.
		b := MustBudget(PerSecond(100), WithoutAdaptive())
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusOK, http.Header{"X-Ratelimit-Limit": {"2"}, "X-Ratelimit-Remaining": {"2"}, "X-Ratelimit-Reset": {"10"}})
		sends := sendTimes(t, b, 5)
		sortDurations(sends)
		want := []time.Duration{0, 0, 4500 * time.Millisecond, 9 * time.Second}
		for i := range want {
			if sends[i] != want[i] {
				t.Fatalf("sends %v, want %v then one just after 10s", sends, want)
			}
		}
		// The last was planned at 13.5 s; at 10 s the report runs out and it
		// is re-timed to the configured pace.
		if last := sends[4]; last < 10*time.Second || last > 10*time.Second+10*time.Millisecond {
			t.Fatalf("sends %v: the last waiter was not re-timed when the report ran out at 10s", sends)
		}
	})
}

func TestDecreaseDuringAPauseDoesNotStretchIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, store := range []bool{false, true} {
			opts := []Option{}
			if store {
				opts = append(opts, WithStore(NewMemoryStore()))
			}
			b := MustBudget(Rate{1, time.Second}, opts...)
			start := time.Now()
			p, _ := b.Acquire(context.Background())
			p.Observe(http.StatusTooManyRequests, retryAfter(2)) // pause until 2 s, rate halved
			time.Sleep(time.Second)
			b.Observe(http.StatusTooManyRequests, nil, time.Time{}) // another refusal: rate quartered
			b.Acquire(context.Background())
			if got := time.Since(start); got != 2*time.Second {
				t.Fatalf("store=%v: first turn after the pause at %v, want 2s (its end)", store, got)
			}
		}
	})
}

func TestHostileQuotaResetSlowsNoLongerThanMaxPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithMaxPause(time.Second))
		p, _ := b.Acquire(context.Background())
		// "1 of 1 left, whole again in 30 days" (or in 10^18 s): no turn may
		// be planned further than the one-second cap.
		for _, reset := range []string{"2592000", "999999999999999999"} {
			p.Observe(http.StatusOK, http.Header{"X-Ratelimit-Limit": {"1"}, "X-Ratelimit-Remaining": {"1"}, "X-Ratelimit-Reset": {reset}})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			for i := range 2 {
				if _, err := b.Acquire(ctx); err != nil {
					t.Fatalf("reset %s, call %d: %v (EffectiveRate %v)", reset, i, err, b.EffectiveRate())
				}
			}
			cancel()
		}
	})
}

// A pause whose end comes from a quota reset, with no Retry-After, may be
// rounded down to a whole second and go on past it: when it ends, one
// probe goes and the rest are held until its answer. Refused by the pause
// still going (its reset says "now"), the probe goes again one interval of
// the pace later, then after twice the last gap; admitted, the quota it
// reports goes at once.
func TestPauseFromAResetEndsWithOneProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		quota := func(remaining, reset string) http.Header {
			return http.Header{"X-Ratelimit-Limit": {"100"}, "X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset}}
		}
		b := MustBudget(PerSecond(100), WithBurst(100))
		p, _ := b.Acquire(ctx)
		p.Observe(http.StatusTooManyRequests, quota("0", "2"))
		if got := b.PauseRemaining(); got != 2*time.Second {
			t.Fatalf("PauseRemaining = %v, want the 2s pause", got)
		}
		gap := 10 * time.Millisecond // the pace's interval, then twice the last gap
		for i := range 3 {
			time.Sleep(b.PauseRemaining())
			probe, err := b.TryAcquire(ctx)
			if err != nil {
				t.Fatalf("probe %d: %v", i, err)
			}
			if _, err := b.TryAcquire(ctx); err == nil {
				t.Fatalf("probe %d: a second call went with it", i)
			}
			probe.Observe(http.StatusTooManyRequests, quota("0", "0")) // the pause goes on
			if got := b.PauseRemaining(); got != gap {
				t.Fatalf("after refused probe %d PauseRemaining = %v, want %v", i, got, gap)
			}
			gap *= 2
		}
		time.Sleep(b.PauseRemaining())
		probe, err := b.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		probe.Observe(http.StatusOK, quota("99", "1"))
		for i := range 99 {
			if _, err := b.TryAcquire(ctx); err != nil {
				t.Fatalf("call %d of the 99 the server holds after the pause: %v", i, err)
			}
		}
	})
}
