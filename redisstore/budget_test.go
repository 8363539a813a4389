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
// on its own clock, obey GCRA's bound exactly (no slack) and leave no gap
// while any turn waits: the budget is spent at its full rate. (A turn
// granted at once, Wait 0, found nothing queued — a stall of the machine
// before it reached Redis — and may follow a gap; checking the gap on that
// flag rather than on the wall clock keeps the test exact on a loaded
// machine.)
func TestTakeObeysTheBoundConcurrentSafe(t *testing.T) {
	a := newStore(t)
	b := otherProcess(t, a)
	const burst, per = 5, 20
	interval := 5 * time.Millisecond // far slower than Redis serves Take: the queue never runs dry
	p := core.Pace{Interval: interval, Burst: burst}
	var mu sync.Mutex
	type granted struct {
		at     int64
		atOnce bool // nothing was queued: the turn is Redis's now
	}
	var turns []granted
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
				turns = append(turns, granted{turn.At, turn.Wait == 0})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Slice(turns, func(i, j int) bool { return turns[i].at < turns[j].at })
	times := make([]time.Time, len(turns))
	for i, g := range turns {
		times[i] = time.Unix(0, g.at)
	}
	if err := quotatest.CheckTimes(times, burst, interval, 0); err != nil {
		t.Fatalf("the turns Redis gave break GCRA's bound: %v", err)
	}
	for i := burst; i < len(turns); i++ {
		if gap := time.Duration(turns[i].at - turns[i-1].at); gap > interval && !turns[i].atOnce {
			t.Fatalf("turn %d waited, yet comes %v after the one before, want at most %v: a gap in the queue", i, gap, interval)
		}
	}
}

// TestBudgetsInTwoProcessesShareOneQuota: two budgets on two stores with
// one key acquire, from many goroutines, at one budget's pace: the turns
// Redis granted obey the bound for one PerSecond(50) exactly (on Redis's
// clock, no slack), no call returned before its turn, and 45 calls took
// at least the 40 turns after the burst (800 ms), not half of that. Only
// lower bounds are checked on the wall clock: a loaded machine can delay
// and bunch the wake-ups, never make them early.
func TestBudgetsInTwoProcessesShareOneQuota(t *testing.T) {
	a := newStore(t)
	sb := otherProcess(t, a)
	ra := record(a)
	budgets := []*core.Budget{
		core.MustBudget(core.PerSecond(50), core.WithBurst(5), core.WithStore(ra)),
		core.MustBudget(core.PerSecond(50), core.WithBurst(5), core.WithStore(ra.share(sb))),
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 45 {
		wg.Go(func() {
			ctx, slot := withSlot(context.Background())
			if _, err := budgets[i%2].Acquire(ctx); err != nil {
				t.Error(err)
				return
			}
			if now, at := time.Now(), slot.last().At; now.UnixNano() < at {
				t.Errorf("Acquire returned %v before its turn", time.Unix(0, at).Sub(now))
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	kept := ra.kept()
	if len(kept) != 45 {
		t.Fatalf("the store granted %d turns kept, want 45 (one per call)", len(kept))
	}
	if err := quotatest.CheckTimes(kept, 5, 20*time.Millisecond, 0); err != nil {
		t.Fatalf("two budgets on one key overspent one quota: %v", err)
	}
	if took < 800*time.Millisecond-time.Millisecond { // Redis's TIME is in µs
		t.Fatalf("45 calls took %v, want at least 800ms (40 turns at 20ms after a burst of 5)", took)
	}
}

// TestBudgetCancelGivesTheTurnBack: a call cancelled while it waits for
// its turn refunds it in Redis, so the next call takes that turn; a call
// whose turn is past its deadline fails at once with core's error and
// reserves nothing. The pace is one turn a minute, so no stall of the
// machine moves a turn: each is checked exactly on Redis's clock, and no
// call waits for one.
func TestBudgetCancelGivesTheTurnBack(t *testing.T) {
	rs := record(newStore(t))
	b := core.MustBudget(core.PerMinute(1), core.WithBurst(1), core.WithStore(rs))
	if _, err := b.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	first, err := rs.cancelWhileWaiting(t, b)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	_, err = b.Acquire(short)
	var rl *core.RateLimitError
	if !errors.As(err, &rl) || rl.Reason != core.Paced {
		t.Fatalf("Acquire with a turn past the deadline = %v, want a paced RateLimitError", err)
	}
	if n := len(rs.turns()); n != 2 {
		t.Fatalf("the store granted %d turns, want 2: the call past its deadline reserved one", n)
	}
	next, _ := rs.cancelWhileWaiting(t, b)
	if next.At != first.At {
		t.Fatalf("the next call's turn is %v after the cancelled call's, want that very turn",
			time.Duration(next.At-first.At))
	}
}
