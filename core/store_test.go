package core

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestStoreBudgetsShareOneQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		a := MustBudget(PerSecond(10), WithStore(s))
		b := MustBudget(PerSecond(10), WithStore(s))
		start := time.Now()
		var mu sync.Mutex
		var sends []int64
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				bud := a
				if i%2 == 1 {
					bud = b
				}
				if _, err := bud.Acquire(context.Background()); err != nil {
					t.Error(err)
				}
				mu.Lock()
				sends = append(sends, int64(time.Since(start)))
				mu.Unlock()
			})
		}
		wg.Wait()
		sortInt64(sends)
		if err := checkBound(sends, 10, int64(100*time.Millisecond)); err != nil {
			t.Fatalf("two budgets on one store overspent the quota: %v", err)
		}
		// 10 at once, then 30 more 100 ms apart: the last at 3 s.
		if last := time.Duration(sends[len(sends)-1]); last != 3*time.Second {
			t.Fatalf("last send at %v, want 3s (one quota of 10/s)", last)
		}
	})
}

func TestStorePauseSeenByOneHoldsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		a := MustBudget(PerSecond(10), WithStore(s))
		b := MustBudget(PerSecond(10), WithStore(s))
		p, _ := a.Acquire(context.Background())
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
		if got := b.PauseRemaining(); got != 2*time.Second {
			t.Fatalf("budget b sees pause %v, want 2s", got)
		}
		start := time.Now()
		if _, err := b.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Fatalf("b sent %v after a's 429, want 2s", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p, _ = a.Acquire(context.Background())
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"5"}})
		_, err := b.Acquire(ctx)
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.StatusCode != 429 || rl.Reason != Paused || rl.RetryAfter != 5*time.Second {
			t.Fatalf("pause past the deadline: err = %v, want RateLimitError{429, paused, 5s}", err)
		}
		// One decrease per burst, shared: both responses were sent before
		// the other's decrease? The second was sent after the first decrease,
		// so the factor is 0.25.
		if st, _ := s.Status(context.Background()); st.Factor != 0.25 {
			t.Fatalf("shared factor = %v, want 0.25", st.Factor)
		}
	})
}

func TestStoreCancelRefundsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		a := MustBudget(Rate{1, time.Second}, WithStore(s))
		a.Acquire(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error)
		go func() { _, err := a.Acquire(ctx); errc <- err }()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		start := time.Now()
		a.Acquire(context.Background())
		if got := time.Since(start); got != time.Second {
			t.Fatalf("after a refund the next turn came in %v, want 1s", got)
		}
	})
}

// TestMemoryStoreRefundsOnlyItsOwnTokens: Refund finds the turn by its
// opaque token; a token that is not the store's refunds nothing, and a
// turn taken after the refunded one keeps it spent.
func TestMemoryStoreRefundsOnlyItsOwnTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := NewMemoryStore()
		p := Pace{Interval: time.Second, Burst: 1}
		s.Take(ctx, p, -1)
		t1, _ := s.Take(ctx, p, -1) // 1 s from now
		for _, tok := range []string{"", "not a token", t1.Token[:15]} {
			if err := s.Refund(ctx, Turn{Token: tok}); err != nil {
				t.Fatalf("Refund(%q) = %v", tok, err)
			}
		}
		if t2, _ := s.Take(ctx, p, -1); t2.Wait != 2*time.Second {
			t.Fatalf("after foreign tokens the next turn is in %v, want 2s: something was refunded", t2.Wait)
		} else {
			s.Refund(ctx, t1) // t2 came after t1: t1 stays spent
			s.Refund(ctx, t2)
		}
		if t3, _ := s.Take(ctx, p, -1); t3.Wait != 2*time.Second {
			t.Fatalf("after refunding the last turn the next is in %v, want 2s", t3.Wait)
		}
	})
}

// flakyStore is a MemoryStore that can be made to fail, standing in for a
// shared store that goes out of reach.
type flakyStore struct {
	*MemoryStore
	down atomic.Bool
}

var errStoreDown = errors.New("store unreachable")

func (s *flakyStore) Take(ctx context.Context, p Pace, maxWait time.Duration) (Turn, error) {
	if s.down.Load() {
		return Turn{}, errStoreDown
	}
	return s.MemoryStore.Take(ctx, p, maxWait)
}

func TestStoreFailureReportedOncePerOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := &flakyStore{MemoryStore: NewMemoryStore()}
		b := MustBudget(PerSecond(100), WithStore(s), WithObserver(rec.observe))
		b.Acquire(context.Background())
		s.down.Store(true)
		for range 3 {
			if _, err := b.Acquire(context.Background()); !errors.Is(err, errStoreDown) {
				t.Fatalf("Acquire with the store down = %v, want the store's error", err)
			}
		}
		s.down.Store(false)
		b.Acquire(context.Background())
		b.Acquire(context.Background())
		fails, recs := rec.of(StoreFailure), rec.of(StoreRecovered)
		if len(fails) != 1 || !errors.Is(fails[0].Err, errStoreDown) || len(recs) != 1 {
			t.Fatalf("events: %d StoreFailure (%v), %d StoreRecovered; want one of each", len(fails), fails, len(recs))
		}
	})
}

func TestStoreCallWaitingWhenAPauseBeginsWaitsItOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1), WithStore(NewMemoryStore()))
		p, _ := b.Acquire(context.Background())
		p.Release()
		start := time.Now()
		done := make(chan time.Duration, 1)
		go func() {
			if _, err := b.Acquire(context.Background()); err != nil {
				t.Error(err)
			}
			done <- time.Since(start)
		}() // its turn: 1 s
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"10"}}) // pause until 10.5 s
		if sent := <-done; sent < 10500*time.Millisecond {
			t.Fatalf("the waiting call was sent at %v, inside the pause that ends at 10.5s", sent)
		}
	})
}

func TestStorePauseEndsWithNoMoreThanTheServerHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithoutAdaptive(), WithStore(NewMemoryStore()))
		p, _ := b.Acquire(context.Background())
		// A GCRA server: one more in 1 s, the quota of 10 whole in 60 s.
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"},
			"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"60"}})
		time.Sleep(time.Second + time.Millisecond)
		n := 0
		for {
			q, err := b.TryAcquire(context.Background())
			if err != nil {
				break
			}
			q.Release()
			n++
		}
		if n != 1 {
			t.Fatalf("%d requests at once when the pause ended, want 1", n)
		}
	})
}

// TestStoreBudgetObserveCountsAsSentAfterAnyDecrease: Budget.Observe on a
// store-backed budget cannot place its sent time on the store's clock, so
// each refusal it reports decreases the shared rate, as documented.
func TestStoreBudgetObserveCountsAsSentAfterAnyDecrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore()
		time.Sleep(time.Second) // the store's clock runs ahead of the budget's
		b := MustBudget(PerSecond(10), WithStore(s))
		b.Observe(http.StatusTooManyRequests, nil, time.Time{})
		b.Observe(http.StatusTooManyRequests, nil, time.Now())
		st, err := s.Status(context.Background())
		if err != nil || st.Factor != 0.25 {
			t.Fatalf("after two refusals through Budget.Observe the shared factor is %v (%v), want 0.25", st.Factor, err)
		}
	})
}
