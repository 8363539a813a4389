package core

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// sendTimes runs n goroutines that Acquire from b at once and returns the
// virtual times (since start) at which each got its turn, in goroutine order.
func sendTimes(t *testing.T, b *Budget, n int) []time.Duration {
	t.Helper()
	return sendAnswered(t, b, n, 0)
}

// sendAnswered is sendTimes with each call answered status (0: not
// observed, as sendTimes) before its permit is released.
func sendAnswered(t *testing.T, b *Budget, n, status int) []time.Duration {
	t.Helper()
	start := time.Now()
	times := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Errorf("Acquire %d: %v", i, err)
				return
			}
			times[i] = time.Since(start)
			if status != 0 {
				p.Observe(status, nil)
			}
			p.Release()
		})
	}
	wg.Wait()
	return times
}

func TestAcquireThousandCallersFinishWhenGCRAPredicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(100))
		start := time.Now()
		times := sendTimes(t, b, 1000)
		// 100 at once, then 900 more 10 ms apart: the last at 9 s exactly.
		if got, want := time.Since(start), 9*time.Second; got != want {
			t.Fatalf("1000 callers at PerSecond(100) took %v, want %v", got, want)
		}
		sends := make([]int64, len(times))
		for i, d := range times {
			sends[i] = int64(d)
		}
		slices.Sort(sends)
		if err := checkBound(sends, 100, int64(10*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if sends[99] != 0 || sends[100] != int64(10*time.Millisecond) {
			t.Fatalf("burst: 100th send at %v, 101st at %v; want 0 and 10ms", time.Duration(sends[99]), time.Duration(sends[100]))
		}
	})
}

// mustDisabled is Disabled for options known to be valid.
func mustDisabled(t *testing.T, opts ...Option) *Budget {
	t.Helper()
	b, err := Disabled(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAcquireServesWaitersInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, 100 * time.Millisecond})
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if _, err := b.Acquire(context.Background()); err != nil {
					t.Error(err)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			synctest.Wait() // goroutine i is queued before i+1 arrives
		}
		wg.Wait()
		for i, got := range order {
			if got != i {
				t.Fatalf("served order %v, want arrival order", order)
			}
		}
	})
}

func TestAcquireTurnAtDeadlineFailsFastAndGivesTurnBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second})
		ctx := context.Background()
		if _, err := b.Acquire(ctx); err != nil { // t=0, spends the burst
			t.Fatal(err)
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second) // turn at 1 s = deadline
		defer cancel()
		start := time.Now()
		_, err := b.Acquire(dctx)
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("a call whose turn is at its deadline waited %v", waited)
		}
		var rl *RateLimitError
		if !errors.As(err, &rl) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a *RateLimitError matching context.DeadlineExceeded", err)
		}
		if rl.RetryAfter != time.Second || rl.StatusCode != 0 || rl.Reason != Paced || !rl.Retryable() {
			t.Fatalf("err = %+v, want RetryAfter 1s, StatusCode 0, Reason paced, retryable", rl)
		}
		// The turn was given back: the next caller gets t=1s.
		if _, err := b.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("next caller sent at %v, want 1s (the returned turn)", got)
		}
	})
}

func TestAcquireDoneContextSpendsNoTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second}, WithMaxInFlight(1))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.Acquire(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire(done ctx) = %v, want context.Canceled", err)
		}
		start := time.Now()
		p, err := b.Acquire(context.Background())
		if err != nil || time.Since(start) != 0 {
			t.Fatalf("after a done context, Acquire = %v after %v; want the untouched burst at once", err, time.Since(start))
		}
		p.Release()
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d, want 0", n)
		}
	})
}

func TestAcquireCancelLastWaiterGivesItsTurnToTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second})
		b.Acquire(context.Background()) // t=0
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { _, err := b.Acquire(ctx); done <- err }() // A: turn at 1 s
		synctest.Wait()
		time.Sleep(300 * time.Millisecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter got %v", err)
		}
		start := time.Now()
		b.Acquire(context.Background()) // B gets A's instant: 1 s
		if got := time.Since(start); got != 700*time.Millisecond {
			t.Fatalf("B waited %v, want 700ms (A's returned turn at 1s)", got)
		}
	})
}

func TestAcquireCancelMiddleWaiterMovesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second})
		start := time.Now()
		b.Acquire(context.Background()) // t=0
		ctx, cancel := context.WithCancel(context.Background())
		errA := make(chan error)
		go func() { _, err := b.Acquire(ctx); errA <- err }() // A: 1 s
		synctest.Wait()
		sentB := make(chan time.Duration)
		go func() { b.Acquire(context.Background()); sentB <- time.Since(start) }() // B: 2 s
		synctest.Wait()
		cancel()
		<-errA
		if got := <-sentB; got != 2*time.Second {
			t.Fatalf("B sent at %v after A (ahead of it) cancelled, want 2s: nothing moves", got)
		}
		b.Acquire(context.Background())
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("C sent at %v, want 3s: A's turn stays spent", got)
		}
	})
}

func TestAcquireWaitsInQueueThenFailsWhenRetimedPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second})
		b.Acquire(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		errc := make(chan error)
		go func() { _, err := b.Acquire(ctx); errc <- err }() // turn at 1 s, fine
		synctest.Wait()
		start := time.Now()
		if err := b.SetRate(Rate{1, 2 * time.Second}); err != nil { // its turn moves to 2 s, past 1.5 s
			t.Fatal(err)
		}
		err := <-errc
		if !errors.Is(err, context.DeadlineExceeded) || !IsBudgetError(err) || time.Since(start) != 0 {
			t.Fatalf("re-timed waiter: err %v after %v, want a budget error at once", err, time.Since(start))
		}
	})
}

func TestSetRateRetimesWaitersWithoutBurstCredit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second})
		start := time.Now()
		b.Acquire(context.Background())
		var got [3]time.Duration
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { b.Acquire(context.Background()); got[i] = time.Since(start) })
			synctest.Wait()
		}
		// Waiters at 1, 2, 3 s. Raise to 10/s with a burst of 10: they are
		// re-timed 100 ms apart, and no burst is created.
		if err := b.SetRate(PerSecond(10)); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		want := [3]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
		if got != want {
			t.Fatalf("after SetRate waiters sent at %v, want %v", got, want)
		}
		if r := b.Rate(); r != PerSecond(10) {
			t.Fatalf("Rate() = %v, want 10/s", r)
		}
	})
}

func TestCancellationStormLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{5, time.Second}, WithMaxInFlight(2))
		var wg sync.WaitGroup
		var ok atomic.Int32
		for i := range 200 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%17)*100*time.Millisecond)
			wg.Go(func() {
				defer cancel()
				p, err := b.Acquire(ctx)
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						t.Errorf("unexpected error %v", err)
					}
					return
				}
				ok.Add(1)
				time.Sleep(30 * time.Millisecond)
				p.Release()
			})
		}
		wg.Wait()
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight after the storm = %d, want 0", n)
		}
		b.mu.Lock()
		q, s := b.queue.N, b.slots.waiting.Head
		b.mu.Unlock()
		if q != 0 || s != nil {
			t.Fatalf("after the storm: %d turn waiters, slot queue empty=%v", q, s == nil)
		}
		if ok.Load() == 0 {
			t.Fatal("no call got through the storm")
		}
		// No turn was lost: after the storm the budget refills and a fresh
		// burst of 5 goes at once.
		time.Sleep(10 * time.Second)
		start := time.Now()
		for range 2 {
			p, _ := b.Acquire(context.Background())
			p.Release()
		}
		if time.Since(start) != 0 {
			t.Fatalf("idle budget made a caller wait %v", time.Since(start))
		}
		// synctest.Test itself fails if any goroutine were left blocked.
	})
}

func TestObserverSeesPacedWaitsOutsideTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *Budget
		var mu sync.Mutex
		var evs []Event
		b = MustBudget(Rate{2, time.Second}, WithName("api"), WithObserver(func(e Event) {
			_ = b.EffectiveRate() // would deadlock if called under the lock
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
		}))
		sendTimes(t, b, 4) // 0, 0, 0.5, 1.0
		var waits []time.Duration
		for _, e := range evs {
			if e.Reason != Paced || e.Budget != "api" {
				t.Fatalf("event %+v, want reason paced from budget api", e)
			}
			waits = append(waits, e.Wait)
		}
		slices.Sort(waits)
		if len(waits) != 2 || waits[0] != 500*time.Millisecond || waits[1] != time.Second {
			t.Fatalf("paced waits %v, want [500ms 1s] (no event for calls that did not wait)", waits)
		}
	})
}

func TestDisabledBudgetNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustDisabled(t)
		start := time.Now()
		for range 10000 {
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			p.Release()
		}
		if time.Since(start) != 0 {
			t.Fatalf("disabled budget waited %v", time.Since(start))
		}
	})
}

func TestNewBudgetRejectsInvalidConfiguration(t *testing.T) {
	cases := []struct {
		name  string
		rate  Rate
		opts  []Option
		field string
	}{
		{"zero requests", Rate{0, time.Second}, nil, "rate.Requests"},
		{"negative requests", Rate{-5, time.Second}, nil, "rate.Requests"},
		{"zero period", Rate{5, 0}, nil, "rate.Period"},
		{"negative period", Rate{5, -time.Second}, nil, "rate.Period"},
		{"faster than 1/ns", Rate{10, 5}, nil, "rate"},
		{"zero burst", PerSecond(5), []Option{WithBurst(0)}, "WithBurst"},
		{"negative cap", PerSecond(5), []Option{WithMaxInFlight(-1)}, "WithMaxInFlight"},
		{"zero max pause", PerSecond(5), []Option{WithMaxPause(0)}, "WithMaxPause"},
		{"max pause past the span", PerSecond(5), []Option{WithMaxPause(time.Duration(math.MaxInt64))}, "WithMaxPause"},
		{"burst overflowing the clock", PerSecond(1), []Option{WithBurst(1 << 40)}, "WithBurst"},
		{"period overflowing when throttled", Rate{1, 200 * 365 * 24 * time.Hour}, nil, "rate"},
		{"NaN decrease", PerSecond(5), []Option{WithAdaptive(Adaptive{Decrease: math.NaN()})}, "WithAdaptive.Decrease"},
		{"decrease above 1", PerSecond(5), []Option{WithAdaptive(Adaptive{Decrease: 1.5})}, "WithAdaptive.Decrease"},
		{"negative min rate", PerSecond(5), []Option{WithAdaptive(Adaptive{MinRate: -0.1})}, "WithAdaptive.MinRate"},
		{"infinite increase", PerSecond(5), []Option{WithAdaptive(Adaptive{Increase: math.Inf(1)})}, "WithAdaptive.Increase"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := NewBudget(c.rate, c.opts...)
			if err == nil || b != nil {
				t.Fatalf("NewBudget(%v) = %v, %v; want an error", c.rate, b, err)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %q: want a *ConfigError for field %q matching ErrInvalidConfig", err, c.field)
			}
			if !strings.HasPrefix(err.Error(), "headgate: "+c.field) {
				t.Fatalf("error %q does not start with %q", err, "headgate: "+c.field)
			}
		})
	}
	if err := MustBudget(PerSecond(1)).SetRate(Rate{}); err == nil {
		t.Fatal("SetRate(zero rate) = nil, want an error")
	}
}

func TestMustBudgetPanicsOnInvalidConfiguration(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustBudget(zero rate) did not panic")
		}
	}()
	MustBudget(Rate{})
}

func TestRateString(t *testing.T) {
	for _, c := range []struct {
		r    Rate
		want string
	}{
		{PerSecond(5), "5/s"}, {PerMinute(300), "300/min"}, {PerHour(5000), "5000/h"},
		{Rate{10, 100 * time.Millisecond}, "10/100ms"}, {Rate{3, 3 * time.Second}, "3/3s"},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.r, got, c.want)
		}
	}
	if got := PerMinute(300).Interval(); got != 200*time.Millisecond {
		t.Errorf("PerMinute(300).Interval() = %v, want 200ms", got)
	}
}

func TestBudgetConcurrentSafe(t *testing.T) {
	b := MustBudget(Rate{1000, 10 * time.Millisecond}, WithMaxInFlight(8))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 200 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(j%5)*time.Millisecond)
				p, err := b.Acquire(ctx)
				if err == nil {
					_ = b.InFlight()
					_ = b.EffectiveRate()
					p.Release()
				}
				cancel()
				if i == 0 && j%50 == 0 {
					b.SetRate(Rate{1000 + j, 10 * time.Millisecond})
				}
			}
		})
	}
	wg.Wait()
	if n := b.InFlight(); n != 0 {
		t.Fatalf("InFlight = %d, want 0", n)
	}
}

func TestCheckReportsWithoutTakingATurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second}, WithMaxInFlight(1))
		p, _ := b.Acquire(context.Background())
		p.Release()
		short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		err := b.Check(short)
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != time.Second || rl.Reason != Paced {
			t.Fatalf("Check with the turn past the deadline = %v, want RateLimitError{1s, paced}", err)
		}
		if err := b.Check(context.Background()); err != nil {
			t.Fatalf("Check without a deadline = %v, want nil", err)
		}
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"5"}})
		long, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel2()
		if err := b.Check(long); !errors.As(err, &rl) || rl.StatusCode != 429 || rl.Reason != Paused {
			t.Fatalf("Check with the pause past the deadline = %v, want a paused RateLimitError with 429", err)
		}
		// Nothing was taken: the next turn is still at 5 s (the pause end).
		start := time.Now()
		p, _ = b.Acquire(context.Background())
		if got := time.Since(start); got != 5*time.Second || b.InFlight() != 1 {
			t.Fatalf("after Check, Acquire waited %v (InFlight %d), want 5s", got, b.InFlight())
		}
		if b.MaxPause() != DefaultMaxPause {
			t.Fatalf("MaxPause = %v", b.MaxPause())
		}
	})
}

func TestTryAcquireNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{2, time.Second}, WithMaxInFlight(2))
		start := time.Now()
		p1, err1 := b.TryAcquire(context.Background())
		p2, err2 := b.TryAcquire(context.Background())
		if err1 != nil || err2 != nil {
			t.Fatalf("the burst of 2: %v, %v", err1, err2)
		}
		if _, err := b.TryAcquire(context.Background()); !errors.Is(err, ErrNoSlot) {
			t.Fatalf("every slot taken: err = %v, want ErrNoSlot", err)
		}
		p1.Release()
		p2.Release()
		_, err := b.TryAcquire(context.Background())
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != 500*time.Millisecond || rl.Reason != Paced {
			t.Fatalf("turn not yet come: err = %v, want RateLimitError{500ms, paced}", err)
		}
		if time.Since(start) != 0 || b.InFlight() != 0 {
			t.Fatalf("TryAcquire waited %v or kept a slot (%d)", time.Since(start), b.InFlight())
		}
		// Nothing was taken by the failures: the next turn is at 500 ms.
		time.Sleep(500 * time.Millisecond)
		p, err := b.TryAcquire(context.Background())
		if err != nil {
			t.Fatalf("at the turn: %v", err)
		}
		p.Release()
	})
}

// TryAcquire never waits for the estimate of the server's quota either:
// when the quota the server reported left is spent (a wait the estimate
// sets, no known one), it fails at once and takes nothing.
func TestTryAcquireNeverWaitsForTheEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(100))
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusOK, http.Header{"X-Ratelimit-Limit": {"100"}, "X-Ratelimit-Remaining": {"3"}, "X-Ratelimit-Reset": {"1"}})
		start := time.Now()
		for i := range 3 {
			if _, err := b.TryAcquire(context.Background()); err != nil {
				t.Fatalf("call %d of the 3 left: %v", i, err)
			}
		}
		_, err := b.TryAcquire(context.Background())
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter <= 0 || time.Since(start) != 0 {
			t.Fatalf("the quota reported spent: err = %v after %v; want a RateLimitError at once, with a RetryAfter", err, time.Since(start))
		}
		b.mu.Lock()
		queued := b.queue.N
		b.mu.Unlock()
		if queued != 0 {
			t.Fatalf("%d calls queued after TryAcquire failed, want none", queued)
		}
	})
}

func TestEffectiveRateNeverOverflows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{Requests: 1e9, Period: time.Second})
		p, _ := b.Acquire(context.Background())
		// A daily quota report: 1000 left until 20 h from now.
		p.Observe(http.StatusOK, http.Header{"X-Ratelimit-Limit": {"1000"}, "X-Ratelimit-Remaining": {"1000"}, "X-Ratelimit-Reset": {"72000"}})
		if r := b.EffectiveRate(); r.Period <= 0 || r.Requests <= 0 {
			t.Fatalf("EffectiveRate = %v, want a positive rate", r)
		}
	})
}

// When the queue empties by its waiters leaving (their contexts ended),
// the pacing state is back where it was before all of them, whichever
// left first: a waiter that left from the head or the middle of the
// queue, its turn kept spent for those behind it while they wait, hands
// that turn back with theirs when the last of them leaves. A later call
// goes at the turn the first of them had.
func TestAcquireWaitersLeavingEmptyTheQueueGiveEveryTurnBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order []int // the waiters (turns at 1s, 2s…) in the order they leave
	}{
		{"head, then the last", []int{0, 1}},
		{"middle, then the last", []int{1, 2, 0}},
		{"head, middle, then the last", []int{0, 1, 2}},
		{"the last, then the head", []int{2, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := MustBudget(Rate{1, time.Second})
				start := time.Now()
				if _, err := b.Acquire(context.Background()); err != nil { // t=0: the burst spent
					t.Fatal(err)
				}
				n := len(tc.order) // every waiter leaves
				cancels := make([]context.CancelFunc, n)
				errs := make([]chan error, n)
				for i := range n { // waiter i: its turn at (i+1) s
					ctx, cancel := context.WithCancel(context.Background())
					cancels[i], errs[i] = cancel, make(chan error, 1)
					go func() { _, err := b.Acquire(ctx); errs[i] <- err }()
					synctest.Wait()
				}
				time.Sleep(300 * time.Millisecond)
				for _, i := range tc.order {
					cancels[i]()
					if err := <-errs[i]; !errors.Is(err, context.Canceled) {
						t.Fatalf("waiter %d: %v, want context.Canceled", i, err)
					}
					synctest.Wait()
				}
				if _, err := b.Acquire(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != time.Second {
					t.Errorf("after every waiter left (in the order %v), a call went at %v; want 1s, the first waiter's turn: no turn leaked", tc.order, got)
				}
			})
		})
	}
}
