package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/headgate-go/headgate/core"
)

// parked is how many callers wait at once in BenchmarkWaiters.
const parked = 100_000

// A waitPeer builds a limiter whose next turn is an hour away (park) or
// that paces at a million per second with a burst of one (drain), and
// returns its blocking call.
type waitPeer struct {
	name  string
	park  func() func(context.Context) error
	drain func() func(context.Context) error
}

var waitPeers = []waitPeer{
	{"headgate",
		func() func(context.Context) error {
			b := core.MustBudget(core.Rate{Requests: 1, Period: time.Hour})
			b.Acquire(context.Background()) // the burst spent: the next turn is an hour away
			return acquireRelease(b)
		},
		func() func(context.Context) error {
			return acquireRelease(core.MustBudget(core.PerSecond(1_000_000), core.WithBurst(1)))
		}},
	{"xrate",
		func() func(context.Context) error {
			l := rate.NewLimiter(rate.Every(time.Hour), 1)
			l.Wait(context.Background())
			return l.Wait
		},
		func() func(context.Context) error { return rate.NewLimiter(1_000_000, 1).Wait }},
}

func acquireRelease(b *core.Budget) func(context.Context) error {
	return func(ctx context.Context) error {
		p, err := b.Acquire(ctx)
		if err != nil {
			return err
		}
		p.Release()
		return nil
	}
}

// BenchmarkWaiters is the many-waiter case, one op a whole run of
// parked callers:
//
//   - park: that many callers wait on one limiter, all with one shared
//     cancellable context (context.WithCancel, as requests carry); B/waiter
//     is the heap they hold while they wait (runtime.MemStats.HeapAlloc,
//     after a GC, over the heap before they came; their goroutines' stacks
//     are not heap, and the goroutines themselves were made once
//     beforehand: warmGoroutines),
//     stackB/waiter the goroutine stack they hold (MemStats.StackInuse the
//     same way: 2 KB each, more for a call that grew its first stack), and
//     ns/cancel the time from cancelling their shared context until the
//     last has returned, per caller;
//   - drain: that many callers arrive at once at a million per second,
//     burst one; ms/drain is the time until the last has its turn (the
//     pace alone needs 100 ms).
func BenchmarkWaiters(b *testing.B) {
	for _, p := range waitPeers {
		b.Run("park/"+p.name, func(b *testing.B) {
			var heap, stack, cancelNs float64
			for b.Loop() {
				h, s, c := parkAndCancel(p.park())
				heap, stack, cancelNs = heap+h, stack+s, cancelNs+c
			}
			b.ReportMetric(heap/float64(b.N), "B/waiter")
			b.ReportMetric(stack/float64(b.N), "stackB/waiter")
			b.ReportMetric(cancelNs/float64(b.N), "ns/cancel")
		})
	}
	for _, p := range waitPeers {
		b.Run("drain/"+p.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += drainAll(p.drain())
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/drain")
		})
	}
}

// warmGoroutines makes n goroutines and lets them end, so that the
// runtime keeps them for reuse: the measures that follow do not count
// the goroutines' own structures. Without it the first limiter measured
// in a process pays for them (some 490 B a goroutine, on the heap) and
// the next one reuses them, so of two limiters of equal waiters the first
// measured reads twice the heap of the second.
func warmGoroutines(n int) {
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range n {
		wg.Go(func() { <-gate })
	}
	close(gate)
	wg.Wait()
}

// parkAndCancel parks parked callers on wait and returns the heap and the
// stack per waiter and the time per waiter to cancel them all.
func parkAndCancel(wait func(context.Context) error) (heapPerWaiter, stackPerWaiter, cancelNsPerWaiter float64) {
	warmGoroutines(parked)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx.Done() // (made once, before the measure)
	var entered atomic.Int64
	var wg sync.WaitGroup
	// Twice: what a sync.Pool held (a budget's recycled waiters, from the
	// run before) lives through one GC in its victim cache, and would be
	// freed during the measure, flattering it.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range parked {
		wg.Go(func() {
			entered.Add(1)
			wait(ctx)
		})
	}
	for entered.Load() < parked {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // every caller is parked by now
	runtime.GC()
	runtime.ReadMemStats(&after)
	start := time.Now()
	cancel()
	wg.Wait()
	elapsed := time.Since(start)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / parked,
		float64(int64(after.StackInuse)-int64(before.StackInuse)) / parked,
		float64(elapsed.Nanoseconds()) / parked
}

// drainAll lets parked callers arrive at once on wait and returns how long
// until the last has its turn.
func drainAll(wait func(context.Context) error) time.Duration {
	warmGoroutines(parked)
	ctx := context.Background()
	var wg sync.WaitGroup
	start := time.Now()
	for range parked {
		wg.Go(func() { wait(ctx) })
	}
	wg.Wait()
	return time.Since(start)
}
