package core

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Waiters are recycled with their channels (queue.go). A caller cancelled
// at the very instant the queue's timer grants its turn races the grant:
// whichever wins, the waiter must go back to the pool with its channel
// empty and in no list, or the next caller to take it from the pool would
// wake at once, before its turn. Every round here reuses the waiters of
// the rounds before; every caller's cancel fires at the instant its turn
// may come, so grants and cancels meet on the same virtual instant.
func TestRecycledWaitersCancelRacingGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Millisecond
		b := MustBudget(PerSecond(1000), WithBurst(1))
		var (
			mu   sync.Mutex
			sent []time.Time
		)
		for round := range 30 {
			var wg sync.WaitGroup
			for i := range 16 {
				ctx, cancel := context.WithCancel(context.Background())
				// Cancelled at the instant a turn of the queue comes:
				// its own, if the callers before it all took theirs.
				time.AfterFunc(time.Duration(i+round%3)*interval, cancel)
				wg.Go(func() {
					defer cancel()
					p, err := b.Acquire(ctx)
					if err != nil {
						if !errors.Is(err, context.Canceled) {
							t.Errorf("round %d: Acquire: %v, want a grant or context.Canceled", round, err)
						}
						return
					}
					mu.Lock()
					sent = append(sent, time.Now())
					mu.Unlock()
					p.Release()
				})
			}
			wg.Wait()
			// Nobody waits now: every waiter the pool holds is clean.
			var held []*waiter
			for range 64 {
				w := b.newWaiter()
				if len(w.wake) != 0 || w.state != queued || w.Next != nil || w.Prev != nil || w.res != nil {
					t.Fatalf("round %d: a recycled waiter is not clean: %d signals pending, state %d", round, len(w.wake), w.state)
				}
				held = append(held, w)
			}
			for _, w := range held {
				b.recycle(w)
			}
		}
		// The bound on send times holds across every round: one turn per
		// interval, burst one.
		slices.SortFunc(sent, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].Sub(sent[i-1]); gap < interval {
				t.Fatalf("admissions %d and %d only %v apart, want at least %v", i-1, i, gap, interval)
			}
		}
		if len(sent) == 0 {
			t.Fatal("no caller was admitted: the race was never run")
		}
		t.Logf("%d admitted of %d", len(sent), 30*16)
	})
}
