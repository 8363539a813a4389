package redisstore

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

// TestTakeObeysTheBoundConcurrentSafe: 64 goroutines on two stores (two
// processes) reserve turns on one key at once. The turns Redis hands out,
// on its own clock, obey GCRA's bound exactly (no slack) and leave no gap:
// the budget is spent at its full rate.
func TestTakeObeysTheBoundConcurrentSafe(t *testing.T) {
	a := newStore(t)
	b, err := New(newClient(t, testAddr), a.Key())
	if err != nil {
		t.Fatal(err)
	}
	const burst, per = 5, 20
	interval := 5 * time.Millisecond // far slower than Redis serves Take: the queue never runs dry
	p := core.Pace{Interval: interval, Burst: burst}
	var mu sync.Mutex
	var ats []int64
	var wg sync.WaitGroup
	for i := range 64 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range per {
				turn, err := s.Take(context.Background(), p, -1)
				if err != nil || !turn.Granted {
					t.Errorf("Take = %+v, %v", turn, err)
					return
				}
				mu.Lock()
				ats = append(ats, turn.At)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Slice(ats, func(i, j int) bool { return ats[i] < ats[j] })
	times := make([]time.Time, len(ats))
	for i, at := range ats {
		times[i] = time.Unix(0, at)
	}
	if err := quotatest.CheckTimes(times, burst, interval, 0); err != nil {
		t.Fatalf("the turns Redis gave break GCRA's bound: %v", err)
	}
	for i := burst; i < len(ats); i++ {
		if gap := time.Duration(ats[i] - ats[i-1]); gap > interval {
			t.Fatalf("turn %d comes %v after the one before, want at most %v: the queue ran dry", i, gap, interval)
		}
	}
}

// TestBudgetsInTwoProcessesShareOneQuota: two budgets on two stores with
// one key send, from many goroutines, at one budget's pace: the send times
// obey the bound for one PerSecond(50), and 45 sends take the 40 turns
// after the burst (800 ms), not half of that.
func TestBudgetsInTwoProcessesShareOneQuota(t *testing.T) {
	a := newStore(t)
	sb, err := New(newClient(t, testAddr), a.Key())
	if err != nil {
		t.Fatal(err)
	}
	budgets := []*core.Budget{
		core.MustBudget(core.PerSecond(50), core.WithBurst(5), core.WithStore(a)),
		core.MustBudget(core.PerSecond(50), core.WithBurst(5), core.WithStore(sb)),
	}
	start := time.Now()
	var mu sync.Mutex
	var sends []time.Time
	var wg sync.WaitGroup
	for i := range 45 {
		wg.Go(func() {
			if _, err := budgets[i%2].Acquire(context.Background()); err != nil {
				t.Error(err)
			}
			mu.Lock()
			sends = append(sends, time.Now())
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := quotatest.CheckTimes(sends, 5, 20*time.Millisecond, 5*time.Millisecond); err != nil {
		t.Fatalf("two budgets on one key overspent one quota: %v", err)
	}
	if took := time.Since(start); took < 780*time.Millisecond {
		t.Fatalf("45 sends took %v, want 800ms (40 turns at 20ms after a burst of 5)", took)
	}
}

// TestBudgetCancelGivesTheTurnBack: a call cancelled while it waits for
// its turn refunds it in Redis, so the next call takes that turn; a call
// whose turn is past its deadline fails at once with core's error and
// reserves nothing.
func TestBudgetCancelGivesTheTurnBack(t *testing.T) {
	s := newStore(t)
	b := core.MustBudget(core.PerSecond(5), core.WithBurst(1), core.WithStore(s)) // a turn every 200 ms
	if _, err := b.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := b.Acquire(ctx); errc <- err }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	_, err := b.Acquire(short)
	var rl *core.RateLimitError
	if !errors.As(err, &rl) || rl.Reason != core.Paced {
		t.Fatalf("Acquire with a turn past the deadline = %v, want a paced RateLimitError", err)
	}
	start := time.Now()
	if _, err := b.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 180*time.Millisecond {
		t.Fatalf("the next call waited %v, want the cancelled call's turn (about 130ms), not the one after (330ms)", took)
	}
}
