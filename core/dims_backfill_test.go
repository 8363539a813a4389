package core

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// backfillRun sends the requests of one seeded scenario (arrival, tokens)
// and returns each one's grant time and whether it went at once while
// others were waiting.
func backfillRun(t *testing.T, seed uint64, backfill bool) (grants []time.Duration, jumped []bool) {
	rng := rand.New(rand.NewPCG(seed, 17))
	// A request waiting for images leaves tokens and turns that others can
	// use without delaying it; one waiting for tokens leaves nothing.
	opts := []Option{WithBurst(3),
		WithDimension("tokens", PerSecond(100), WithDimensionBurst(100)),
		WithDimension("images", PerSecond(2), WithDimensionBurst(4))}
	if backfill {
		opts = append(opts, WithBackfill())
	}
	b := MustBudget(PerSecond(20), opts...)
	const n = 60
	grants, jumped = make([]time.Duration, n), make([]bool, n)
	start := time.Now()
	var wg sync.WaitGroup
	at := time.Duration(0)
	for i := range n {
		at += time.Duration(1+rng.IntN(150)) * time.Millisecond
		costs := []Cost{{"tokens", int64(1 + rng.IntN(30))}}
		switch rng.IntN(5) {
		case 0:
			costs[0].Amount = int64(50 + rng.IntN(51)) // many tokens
		case 1:
			costs = append(costs, Cost{"images", int64(1 + rng.IntN(4))})
		}
		arrive := at
		wg.Go(func() {
			time.Sleep(arrive)
			b.mu.Lock()
			waiting := b.queue.N > 0
			b.mu.Unlock()
			p, err := b.AcquireCost(context.Background(), costs...)
			if err != nil {
				t.Errorf("AcquireCost: %v", err)
				return
			}
			grants[i] = time.Since(start)
			jumped[i] = waiting && grants[i] == arrive
			p.Commit(costs...)
			p.Release()
		})
	}
	wg.Wait()
	return grants, jumped
}

// TestBackfillNeverDelaysTheHead runs seeded scenarios with backfilling off
// and on: every request that arrived before the first backfill (the queue
// it jumped, and those granted before) is granted at the same instant in
// both runs, and backfilling did happen.
func TestBackfillNeverDelaysTheHead(t *testing.T) {
	const seeds = 30
	jumps := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		var off, on []time.Duration
		var jumped []bool
		synctest.Test(t, func(t *testing.T) { off, _ = backfillRun(t, seed, false) })
		synctest.Test(t, func(t *testing.T) { on, jumped = backfillRun(t, seed, true) })
		first := len(on)
		for i := range jumped {
			if jumped[i] && on[i] < off[i] {
				first = i
				jumps++
				break
			}
		}
		for i := range first {
			if on[i] != off[i] {
				t.Fatalf("seed %d: request %d granted at %v with backfilling, %v without", seed, i, on[i], off[i])
			}
		}
		// Every backfilled request goes no later than it would have.
		for i := range jumped {
			if jumped[i] && on[i] > off[i] && i < first {
				t.Fatalf("seed %d: backfilled request %d went later", seed, i)
			}
		}
	}
	if jumps == 0 {
		t.Fatal("no request was backfilled: the test proves nothing")
	}
	t.Logf("%d of %d scenarios backfilled", jumps, seeds)
}
