package core

import (
	"github.com/headgate-go/headgate/core/internal/quota"

	"context"
	"errors"
	"math"
	"net/http"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// A budget whose state is in a Store reads responses with its own
// estimate, as a budget in memory does: configured with the server's exact rate and
// burst, it is as fast as the server allows (wantExact). On fixed windows
// the want is missed today: held to the naive client's 429s and makespan.
func TestStoreBatchConfiguredExactRate(t *testing.T) {
	t.Parallel()
	for _, s := range batchServers {
		t.Run(s.name, func(t *testing.T) {
			bt := issueBatch(s.cfg)
			bt.rate, bt.burst = PerSecond(100), s.burst
			var holds *want
			if s.cfg.Algorithm == quotatest.FixedWindow {
				naive := naiveOf(t, nil, bt)
				holds = &want{refused: naive.refused, x: naive.x * 1.01}
			}
			synctest.Test(t, func(t *testing.T) {
				bt.store = NewMemoryStore()
				r := runBatch(t, bt)
				x := float64(r.makespan) / float64(bt.ideal())
				t.Logf("429s %.1f%%, makespan %v = %.3f × ideal %v", r.refusedPct(bt.n), r.makespan, x, bt.ideal())
				judge(t, r.refusedPct(bt.n), x, wantExact, holds)
			})
		})
	}
}

// Configured at twice the server's rate (and burst), a fleet's budget finds it as
// one budget in memory does (TestBatchConfiguredTwiceTheRate): wantTwice. Missed
// today, on GCRA worse than the naive client (a store's turns do not wait
// for the estimate of the quota; only a refusal's wait, a cut of the
// no-quota pace and the report's shape reach the fleet): held to the
// bound met, the naive client's 429s or 97 %, the more, and 1.25× (the
// worst of 40 runs: 96.2 %, 1.248×). (A server that sends only a
// whole-second Retry-After is left out, as there.)
func TestStoreBatchConfiguredTwiceTheRate(t *testing.T) {
	t.Parallel()
	for _, s := range batchServers {
		if s.cfg.Headers == gcra10RA.Headers && s.cfg.Algorithm == quotatest.GCRA {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			bt := issueBatch(s.cfg)
			bt.rate, bt.burst = PerSecond(200), 2*s.burst
			naive := naiveOf(t, nil, bt)
			synctest.Test(t, func(t *testing.T) {
				bt.store = NewMemoryStore()
				r := runBatch(t, bt)
				x := float64(r.makespan) / float64(bt.ideal())
				t.Logf("429s %.1f%%, makespan %v = %.3f × ideal %v", r.refusedPct(bt.n), r.makespan, x, bt.ideal())
				judge(t, r.refusedPct(bt.n), x, wantTwice, &want{refused: max(naive.refused, 97), x: 1.25})
			})
		})
	}
}

// Two budgets share a MemoryStore, and the server reports no quota. A run
// of admissions, then a refusal, shows the fleet's pace just above the
// server's: the reporting budget cuts the pace by a/(a+1) for a run of a
// admitted rather than by Decrease (pace.go), and the store takes that
// factor for the whole fleet — not half. A refusal the other budget
// reports, of a request sent before, is the same burst: it lowers nothing
// more. (redisstore's TestFleetEasesRatherThanHalves checks its script
// alike.)
func TestStoreFleetEasesRatherThanHalves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		ctx := context.Background()
		a := MustBudget(PerSecond(100), WithBurst(1), WithStore(s))
		b := MustBudget(PerSecond(100), WithBurst(1), WithStore(s))
		first, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first.Observe(http.StatusTooManyRequests, nil) // no wait named, no run before it: the pace halves
		first.Release()
		if st, _ := s.Status(ctx); st.Factor != 0.5 {
			t.Fatalf("after a refusal that names no wait: factor %v, want 0.5", st.Factor)
		}
		const run = 8
		for range run {
			p, err := a.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // the answer's way back
			p.Observe(http.StatusOK, nil)
			p.Release()
		}
		before, _ := s.Status(ctx)
		early, err := b.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		p.Observe(http.StatusTooManyRequests, nil)
		p.Release()
		st, _ := s.Status(ctx)
		t.Logf("the fleet's factor %v after %d admitted, %v after the refusal", before.Factor, run, st.Factor)
		if st.Factor <= before.Factor/2 || st.Factor >= before.Factor {
			t.Fatalf("the fleet's factor after a refusal ending a run of %d admitted: %v → %v; want eased: above the halving's %v, below %v",
				run, before.Factor, st.Factor, before.Factor/2, before.Factor)
		}
		early.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
		early.Release()
		if again, _ := s.Status(ctx); again.Factor != st.Factor {
			t.Errorf("after the other budget's refusal of a request sent before the decrease: factor %v, want %v (one burst counts once)", again.Factor, st.Factor)
		}
	})
}

// A budget of a fleet decides a cut from the fleet's factor, not its own:
// refused after the fleet was cut, at the cut pace, it cuts the fleet
// again. (Deciding from its own, the factor it had before it took a turn,
// it named the factor the fleet already had: the store kept it, and a
// refusal of the cut pace cut nothing.)
func TestStoreRefusalCutsFromTheFleetsFactor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		ctx := context.Background()
		a := MustBudget(PerSecond(100), WithBurst(1), WithStore(s))
		b := MustBudget(PerSecond(100), WithBurst(1), WithStore(s))
		p, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		p.Observe(http.StatusTooManyRequests, nil) // no wait named: the fleet's pace halves
		p.Release()
		q, err := b.Acquire(ctx) // at the fleet's cut pace
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		q.Observe(http.StatusTooManyRequests, nil) // the cut pace is still too fast
		q.Release()
		st, _ := s.Status(ctx)
		if st.Factor != 0.25 {
			t.Errorf("the fleet's factor after a refusal at the cut pace 0.5: %v, want 0.25 (halved again)", st.Factor)
		}
		if r := b.EffectiveRate(); r != (Rate{100, 4 * time.Second}) {
			t.Errorf("the refusing budget's effective rate %v, want the fleet's 100/4s", r)
		}
	})
}

// A cut reaches the calls already waiting for a turn the store gave at
// the faster pace: what is left of their waits stretches to the cut pace,
// as a budget in memory re-times its queue — they do not go at the pace
// that drew the refusal.
func TestStoreCutRetimesTheWaitingCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		b := MustBudget(PerSecond(10), WithBurst(1), WithStore(s))
		p, err := b.Acquire(context.Background()) // the burst of one
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var sent []time.Time
		var wg sync.WaitGroup
		for range 4 { // turns at 100, 200, 300 and 400 ms
			wg.Go(func() {
				q, err := b.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sent = append(sent, time.Now())
				mu.Unlock()
				q.Release()
			})
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		p.Observe(http.StatusTooManyRequests, nil) // no wait named: the pace is too fast, cut to 5/s
		cut := time.Now()
		wg.Wait()
		sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
		for i, at := range sent {
			if i > 0 && at.Sub(sent[i-1]) < 200*time.Millisecond {
				t.Errorf("calls sent %v and %v after the cut: closer than the cut pace's 200ms", sent[i-1].Sub(cut), at.Sub(cut))
			}
		}
	})
}

// A 429 the budget's controller found no cut (a near miss) shows no room
// either: it neither cuts the shared factor nor grows it; the next success
// that shows room grows it along the CUBIC curve from the cut, and a
// success that reports the quota spent does not.
func TestStoreA429WithoutACutRestoresNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		a := DefaultAdaptive()
		p := Pace{Interval: 10 * time.Millisecond, Burst: 1, Adaptive: a}
		ctx := context.Background()
		turn, err := s.Take(ctx, p, -1)
		if err != nil {
			t.Fatal(err)
		}
		// (The successes' requests sent after the cut: "just now".)
		spent := Report{Status: 200, Sent: math.MaxInt64, Pace: p, Remaining: 0, Limit: 10, Reset: time.Second}
		for i, c := range []struct {
			r    Report
			want float64
		}{
			{Report{Status: 429, Refused: true, Sent: turn.At, Pace: p}, 0.5},
			{Report{Status: 429, Sent: turn.At, Pace: p}, 0.5},
			{spent, 0.5},
			{Report{Status: 200, Sent: math.MaxInt64, Pace: p, Remaining: -1, Limit: -1, Reset: -1}, quota.Cubic(1, a.Decrease, a.Increase, 1)},
		} {
			time.Sleep(time.Second)
			st, err := s.Report(ctx, c.r)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(st.Factor-c.want) > 1e-9 {
				t.Errorf("report %d, a %d (refused: %v, remaining %d) a second later: factor %v, want %v", i, c.r.Status, c.r.Refused, c.r.Remaining, st.Factor, c.want)
			}
		}
	})
}

// The shared factor's recovery clock does not run while the fleet is
// paused: nothing sent then showed room. A success that shows room after
// the pause grows the factor by the time since the pause ended, not since
// the cut.
func TestStoreRecoveryClockStopsInAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		a := DefaultAdaptive()
		p := Pace{Interval: 10 * time.Millisecond, Burst: 1, Adaptive: a}
		ctx := context.Background()
		if _, err := s.Report(ctx, Report{Status: 429, Refused: true, Sent: math.MaxInt64, Pace: p}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if _, err := s.Report(ctx, Report{Status: 429, Pause: 2 * time.Second, Sent: math.MaxInt64, Pace: p}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // the pause ends 1 s before the success
		st, err := s.Report(ctx, Report{Status: 200, Sent: math.MaxInt64, Pace: p, Remaining: -1, Limit: -1, Reset: -1})
		if err != nil {
			t.Fatal(err)
		}
		if want := quota.Cubic(1, a.Decrease, a.Increase, 1); math.Abs(st.Factor-want) > 1e-9 {
			t.Errorf("a success 1 s after a pause that began 0.5 s after the cut: factor %v, want %v (1 s of recovery)", st.Factor, want)
		}
	})
}

// A budget on a store reports RateChanged for the fleet's factor: a
// decrease when the store's falls, not when its own controller's verdict
// grew a factor the store then did not (the shared factor recovers by the
// store's rule).
func TestStoreRateChangedFollowsTheFleetsFactor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		var mu sync.Mutex
		var decreases []Event
		b := MustBudget(PerSecond(10), WithStore(s), WithObserver(func(e Event) {
			if e.Reason == RateChanged && e.NewRate < e.OldRate {
				mu.Lock()
				decreases = append(decreases, e)
				mu.Unlock()
			}
		}))
		room := http.Header{"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"5"}, "X-Ratelimit-Reset": {"1"}}
		p, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p.Observe(http.StatusTooManyRequests, nil) // no wait named: the fleet's pace halves
		for range 30 {
			time.Sleep(200 * time.Millisecond)
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			p.Observe(http.StatusOK, room)
			p.Release()
		}
		mu.Lock()
		defer mu.Unlock()
		if len(decreases) != 1 || decreases[0].Status != http.StatusTooManyRequests {
			t.Errorf("decreases reported: %+v; want one, the 429's", decreases)
		}
	})
}

// A refusal that states a known wait (more than a second) pauses the fleet
// for that wait at the least, even when the budget's estimate expected a
// token back sooner (a 200 that spent the last token at a pace that refills
// one in 50 ms): the other budgets never go into the server's wait.
func TestStoreRefusalPausesTheFleetForItsKnownWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		a := MustBudget(PerSecond(20), WithBurst(15), WithStore(s))
		b := MustBudget(PerSecond(20), WithBurst(15), WithStore(s))
		ctx := context.Background()
		p, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The quota spent: by the estimate a token is back at the pace.
		p.Observe(http.StatusOK, http.Header{"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1"}})
		p.Release()
		time.Sleep(60 * time.Millisecond)
		p, err = a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
		p.Release()
		refused := time.Now()
		q, err := b.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		q.Release()
		if got := time.Since(refused); got < 2*time.Second {
			t.Errorf("the other budget went %v after a refusal that asked for 2s, want 2s at the least", got)
		}
	})
}

// A refusal reported by a budget whose mirror is stale (factor 1: it took
// no turn since the fleet was cut to 0.3) names plateau 1: the store keeps
// its factor, and its plateau is never above the factor the refusal found
// — taken as it is, the next success showing room jumped the factor to
// quota.Cubic(1, β, ·, ~0) = 0.5: a refusal raised it.
func TestStoreStaleBudgetsRefusalNeverRaisesTheFactor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		a := DefaultAdaptive()
		p := Pace{Interval: 10 * time.Millisecond, Burst: 1, Adaptive: a}
		ctx := context.Background()
		rep := func(r Report) float64 {
			time.Sleep(10 * time.Millisecond)
			r.Sent, r.Pace = math.MaxInt64, p
			st, err := s.Report(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			return st.Factor
		}
		rep(Report{Status: 429, Refused: true, Factor: 0.5, Plateau: 1})
		before := rep(Report{Status: 429, Refused: true, Factor: 0.3, Plateau: 0.5})
		rep(Report{Status: 429, Refused: true, Factor: 0.5, Plateau: 1}) // the stale budget's
		after := rep(Report{Status: 200, Remaining: -1, Limit: -1, Reset: -1})
		t.Logf("factor %v after the cut, %v after a refusal and a success", before, after)
		if after > before {
			t.Errorf("a refusal then a success 10 ms later raised the factor %v → %v", before, after)
		}
	})
}

// A call waiting for its store turn whose wait a cut stretches past its
// context deadline fails at once with a *RateLimitError (doc.go), as a
// budget in memory does (retimeLocked) — not asleep until the deadline,
// ending with the context's bare error and no RetryAfter for a retry layer.
func TestStoreCutPastTheDeadlineFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		b := MustBudget(PerSecond(10), WithBurst(1), WithStore(s))
		first, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		start := time.Now()
		done := make(chan error, 1)
		go func() { _, err := b.Acquire(ctx); done <- err }()
		time.Sleep(10 * time.Millisecond)              // it waits for its turn at 100 ms
		first.Observe(http.StatusTooManyRequests, nil) // a cut: its turn is now ~190 ms away
		first.Release()
		err = <-done
		var rl *RateLimitError
		t.Logf("after %v: %v", time.Since(start), err)
		if !errors.As(err, &rl) || time.Since(start) > 20*time.Millisecond {
			t.Errorf("waited %v, err %v (%T); want a *RateLimitError at once", time.Since(start), err, err)
		}
	})
}

// The calls waiting for their store turn are woken when the shared factor
// falls (a cut may stretch a wait past its deadline), when it rose by
// wakeStep since they were last woken, or back to 1 — not at each small step of
// CUBIC's growth, which came with almost every success (every waiting
// call taking the budget's lock twice per response).
func TestStoreWaitingCallsWokenByFallsAndRealRises(t *testing.T) {
	b := MustBudget(PerSecond(10), WithStore(NewMemoryStore()))
	p := b.pacer.(*storePacer)
	for _, step := range []struct {
		f    float64
		wake bool
	}{
		{0.5, true}, {0.505, false}, {0.51, false}, {0.52, true}, {0.4, true}, {0.41, false}, {1, true},
	} {
		b.lock()
		before := p.changed
		p.mirror(step.f)
		woke := p.changed != before
		b.unlock()
		if woke != step.wake {
			t.Errorf("factor to %v: woke %v, want %v", step.f, woke, step.wake)
		}
	}
}

// A refusal that does not lower the fleet's factor — an ease to the pace
// it already has: the server admitted all of it — still restarts its recovery
// from the plateau it names, as the controller's ease does: the fleet does
// not climb on from the clock of the cut before, into the next refusal.
func TestStoreRefusalAtTheFactorRestartsItsRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		p := Pace{Interval: 10 * time.Millisecond, Burst: 1, Adaptive: DefaultAdaptive()}
		report := func(r Report) float64 {
			r.Sent, r.Pace = math.MaxInt64, p
			st, err := s.Report(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			return st.Factor
		}
		room := Report{Status: 200, Remaining: 5, Limit: 10, Reset: time.Second}
		report(Report{Status: 429, Refused: true, Factor: 0.5, Plateau: 1})
		var f float64
		for range 20 { // two seconds of room
			time.Sleep(100 * time.Millisecond)
			f = report(room)
		}
		time.Sleep(10 * time.Millisecond)
		report(Report{Status: 429, Refused: true, Factor: f, Plateau: f}) // eased to the pace it has
		grown := f
		for range 40 { // four more seconds of room
			time.Sleep(100 * time.Millisecond)
			grown = report(room)
		}
		t.Logf("factor %.3f at the refusal, %.3f four seconds on", f, grown)
		if grown > f {
			t.Errorf("factor %.3f → %.3f in the four seconds after a refusal at it; want the recovery restarted from that plateau (CUBIC below it for %.1f s)", f, grown, f*0.5/0.1)
		}
	})
}
