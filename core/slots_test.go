package core

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestMaxInFlightCapsOpenRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithMaxInFlight(3))
		var open, peak atomic.Int32
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				p, err := b.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				n := open.Add(1)
				for {
					m := peak.Load()
					if n <= m || peak.CompareAndSwap(m, n) {
						break
					}
				}
				if got := b.InFlight(); got > 3 {
					t.Errorf("InFlight = %d > cap 3", got)
				}
				time.Sleep(50 * time.Millisecond) // the response body is open
				open.Add(-1)
				p.Release()
				p.Release() // idempotent
			})
		}
		wg.Wait()
		if peak.Load() != 3 {
			t.Fatalf("peak open requests = %d, want 3", peak.Load())
		}
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight after all released = %d, want 0", n)
		}
	})
}

func TestMaxInFlightSlotTakenBeforeTurnSoSendsKeepPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One slot, 1 req/s burst 1: a caller that waits for the slot still
		// gets a turn at the pace, not right after the slot frees.
		b := MustBudget(Rate{1, time.Second}, WithMaxInFlight(1))
		start := time.Now()
		p, _ := b.Acquire(context.Background())
		sent := make(chan time.Duration)
		go func() { p2, _ := b.Acquire(context.Background()); sent <- time.Since(start); p2.Release() }()
		time.Sleep(100 * time.Millisecond)
		p.Release()
		if got := <-sent; got != time.Second {
			t.Fatalf("second request sent at %v, want 1s (its turn)", got)
		}
	})
}

func TestSlotWaitHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(100), WithMaxInFlight(1))
		p, _ := b.Acquire(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := b.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slot wait past the deadline: %v", err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Fatalf("slot wait gave up after %v, want at the 2s deadline", got)
		}
		p.Release()
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d, want 0", n)
		}
	})
}

func TestReleaseOnACopyFreesTheSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithMaxInFlight(1))
		p, _ := b.Acquire(context.Background())
		release := func(p Permit) { p.Release() }
		release(p)  // a helper releases its copy…
		p.Release() // …and the caller's deferred Release runs too
		q, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p.Release() // a stale copy must not free q's slot
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := b.Acquire(ctx); err == nil || b.InFlight() != 1 {
			t.Fatalf("WithMaxInFlight(1) admitted a second open request (err %v, InFlight %d)", err, b.InFlight())
		}
		q.Release()
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d, want 0", n)
		}
	})
}

func TestSlotWaiterFailsAtOnceWhenAPauseOutlastsItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(100), WithMaxInFlight(1))
		a, _ := b.Acquire(context.Background())
		errc := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := b.Acquire(ctx)
			errc <- err
		}()
		synctest.Wait()
		start := time.Now()
		a.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"60"}})
		err := <-errc
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.StatusCode != 429 || time.Since(start) != 0 {
			t.Fatalf("slot waiter: err %v after %v, want a RateLimitError with 429 at once", err, time.Since(start))
		}
		a.Release()
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d, want 0", n)
		}
	})
}

func TestPanickingObserverLeaksNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := func(e Event) {
			if e.Reason == Paced || e.Reason == SlotWait {
				panic("observer bug")
			}
		}
		b := MustBudget(PerSecond(1), WithMaxInFlight(1), WithObserver(obs))
		p, _ := b.Acquire(context.Background())
		p.Release()
		func() {
			defer func() { recover() }()
			b.Acquire(context.Background()) // waits 1 s: its Paced event panics
		}()
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d after a panicking observer, want 0", n)
		}
	})
}

// TestWithMaxInFlightBoundedAndLazy checks that a cap too large to number
// is an error naming the option, and that a large valid cap allocates
// nothing up front: slots come into being as they are first taken.
func TestWithMaxInFlightBoundedAndLazy(t *testing.T) {
	for _, n := range []int{math.MaxInt, 1 << 31, -1} {
		_, err := NewBudget(PerSecond(1), WithMaxInFlight(n))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "WithMaxInFlight" {
			t.Errorf("NewBudget(WithMaxInFlight(%d)) = %v, want a ConfigError on WithMaxInFlight", n, err)
		}
	}
	b, err := NewBudget(PerSecond(1000), WithMaxInFlight(math.MaxInt32))
	if err != nil {
		t.Fatalf("NewBudget(WithMaxInFlight(MaxInt32)) = %v", err)
	}
	if n := cap(b.slotGen) + cap(b.freeSlots); n != 0 {
		t.Errorf("NewBudget(WithMaxInFlight(MaxInt32)) allocated %d slots up front, want 0", n)
	}
	p1, err1 := b.Acquire(context.Background())
	p2, err2 := b.Acquire(context.Background())
	if err1 != nil || err2 != nil || b.InFlight() != 2 {
		t.Fatalf("two Acquires = %v, %v with InFlight %d, want two permits", err1, err2, b.InFlight())
	}
	p1.Release()
	p3, _ := b.Acquire(context.Background()) // reuses the freed slot
	if len(b.slotGen) != 2 {
		t.Errorf("after a release and a third Acquire, %d slots exist, want 2 (the freed one reused)", len(b.slotGen))
	}
	p2.Release()
	p3.Release()
	if b.InFlight() != 0 {
		t.Errorf("InFlight = %d after every release, want 0", b.InFlight())
	}
}

// TestSlotWaitFailsFastWhenAPauseOutlastsTheDeadline: a caller waiting for
// a concurrency slot fails at once, like one waiting for its turn, when a
// server pause ends after its deadline — whether the pause came before it
// queued or while it waited.
func TestSlotWaitFailsFastWhenAPauseOutlastsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(100), WithMaxInFlight(1))
		holder, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errc := make(chan error, 1)
		go func() { _, err := b.Acquire(ctx); errc <- err }()
		synctest.Wait() // it waits for the slot
		holder.Observe(http.StatusTooManyRequests, retryAfter(30))
		err = <-errc
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.Reason != Paused || rl.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("queued slot waiter: %v, want a Paused RateLimitError after status 429", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("queued slot waiter failed after %v, want at once", d)
		}
		if _, err := b.Acquire(ctx); !errors.As(err, &rl) || rl.Reason != Paused {
			t.Fatalf("new slot waiter: %v, want a Paused RateLimitError", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("new slot waiter failed after %v, want at once", d)
		}
		holder.Release()
	})
}
