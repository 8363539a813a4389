package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestWithDimensionValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"empty name", []Option{WithDimension("", PerMinute(10))}},
		{"requests", []Option{WithDimension("requests", PerMinute(10))}},
		{"twice", []Option{WithDimension("tokens", PerMinute(10)), WithDimension("tokens", PerMinute(20))}},
		{"zero rate", []Option{WithDimension("tokens", Rate{})}},
		{"zero burst", []Option{WithDimension("tokens", PerMinute(10), WithDimensionBurst(0))}},
		{"200 years", []Option{WithDimension("tokens", Rate{Requests: 1, Period: 200 * 365 * 24 * time.Hour})}},
		{"burst spans 73 years", []Option{WithDimension("tokens", PerSecond(1), WithDimensionBurst(3e9))}},
		{"backfill with store", []Option{WithDimension("tokens", PerMinute(10)), WithBackfill(), WithStore(NewMemoryStore())}},
	} {
		if _, err := NewBudget(PerSecond(1), tc.opts...); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: NewBudget = %v, want ErrInvalidConfig", tc.name, err)
		}
	}
}

// TestWithDimensionBlamesTheRate checks that an invalid dimension rate is
// reported as the rate, not as the burst that defaults to its Requests.
func TestWithDimensionBlamesTheRate(t *testing.T) {
	_, err := NewBudget(PerSecond(1), WithDimension("tokens", Rate{}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != `WithDimension("tokens").Requests` {
		t.Errorf("NewBudget(WithDimension(tokens, Rate{})) = %v, want a ConfigError on WithDimension(\"tokens\").Requests", err)
	}
}

func TestAcquireCostRejectsUnknownAndTooLarge(t *testing.T) {
	b := MustBudget(PerSecond(10), WithDimension("tokens", PerMinute(1000), WithDimensionBurst(100)))
	ctx := context.Background()
	if _, err := b.AcquireCost(ctx, Cost{"bytes", 1}); !errors.Is(err, ErrUnknownDimension) {
		t.Errorf("AcquireCost(bytes) = %v, want ErrUnknownDimension", err)
	}
	if _, err := b.AcquireCost(ctx, Cost{"tokens", 101}); !errors.Is(err, ErrCostTooLarge) {
		t.Errorf("AcquireCost(tokens 101) = %v, want ErrCostTooLarge", err)
	}
	if _, err := b.AcquireCost(ctx, Cost{"tokens", 60}, Cost{"tokens", 60}); !errors.Is(err, ErrCostTooLarge) {
		t.Errorf("AcquireCost(tokens 60+60) = %v, want ErrCostTooLarge", err)
	}
	if _, err := MustBudget(PerSecond(1)).AcquireCost(ctx, Cost{"tokens", 1}); !errors.Is(err, ErrUnknownDimension) {
		t.Errorf("AcquireCost on a budget without dimensions = %v, want ErrUnknownDimension", err)
	}
	p, err := b.AcquireCost(ctx, Cost{"tokens", 100})
	if err != nil {
		t.Fatalf("AcquireCost(tokens 100) = %v", err)
	}
	p.Release()
}

// TestAcquireCostCommitSettles checks the settlement arithmetic step by
// step at fixed virtual instants: 60 tokens/min with a burst of 60 is one
// token a second.
func TestAcquireCostCommitSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerMinute(60)))
		start := time.Now()
		take := func(step int, n int64, want time.Duration) Permit {
			t.Helper()
			p, err := b.AcquireCost(context.Background(), Cost{"tokens", n})
			if err != nil {
				t.Fatalf("step %d: AcquireCost(%d) = %v", step, n, err)
			}
			if got := time.Since(start); got != want {
				t.Fatalf("step %d: AcquireCost(%d) granted at %v, want %v", step, n, got, want)
			}
			return p
		}
		p := take(1, 60, 0)
		p.Commit(Cost{"tokens", 20}) // nobody reserved after: 40 come back
		p.Release()
		p = take(2, 40, 0)
		p.Commit(Cost{"tokens", 40})
		// The bucket is empty: 30 more wait 30 s.
		p = take(3, 30, 30*time.Second)
		// Overspend: 30 reserved, 90 used: 60 tokens of debt.
		p.Commit(Cost{"tokens", 90})
		p.Commit(Cost{"tokens", 0}) // idempotent: the first Commit settled
		p.Release()
		// 10 tokens now wait for the debt (60 s) and for themselves (10 s).
		q := take(4, 10, 100*time.Second)
		// Release without Commit gives the estimate back: the next 10 go at once.
		q.Release()
		q = take(5, 10, 100*time.Second)
		q.Commit(Cost{"tokens", 10})
	})
}

// TestCommitAfterLaterReservationGivesBackOnlyTheSlack checks that an
// underspend is not given back once a later reservation relied on it.
func TestCommitAfterLaterReservationGivesBackOnlyTheSlack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10 tokens a second, burst 10.
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(10)))
		ctx := context.Background()
		start := time.Now()
		a, _ := b.AcquireCost(ctx, Cost{"tokens", 10}) // t=0, empties the bucket
		time.Sleep(2 * time.Second)                    // the bucket is full again
		c, _ := b.AcquireCost(ctx, Cost{"tokens", 10}) // t=2 s, empties it
		// a used nothing, but the bucket already refilled past a's tokens:
		// giving them back now would let 20 tokens go at t=2 s.
		a.Commit()
		c.Commit(Cost{"tokens", 10})
		d, _ := b.AcquireCost(ctx, Cost{"tokens", 10})
		if got, want := time.Since(start), 3*time.Second; got != want {
			t.Fatalf("third 10 tokens granted at %v, want %v", got, want)
		}
		d.Release()
	})
}

// TestAcquireCostTwoLimitsBindOnTheTighter runs a batch under a requests
// limit and a tokens limit and checks the makespan is set by whichever is
// tighter, then swaps them.
func TestAcquireCostTwoLimitsBindOnTheTighter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rps      int   // requests per second
		tps      int   // tokens per second
		cost     int64 // tokens per request
		n        int
		wantLast time.Duration
		bindsOn  string
	}{
		// 100 req/s, 1000 tok/s, 100 tokens each: tokens allow 10 req/s.
		{"tokens bind", 100, 1000, 100, 60, 5900 * time.Millisecond, "tokens"},
		// 10 req/s, 100000 tok/s, 100 tokens each: requests allow 10 req/s, tokens 1000.
		{"requests bind", 10, 100_000, 100, 60, 5900 * time.Millisecond, "requests"},
		// Swapped: 5 req/s; tokens allow 1000 req/s: twice slower than the first.
		{"requests bind slower", 5, 100_000, 100, 60, 11800 * time.Millisecond, "requests"},
		// 100 req/s, 500 tok/s: tokens allow 5 req/s.
		{"tokens bind slower", 100, 500, 100, 60, 11800 * time.Millisecond, "tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Burst of one request and one request's tokens: a steady pace.
				b := MustBudget(PerSecond(tc.rps), WithBurst(1),
					WithDimension("tokens", PerSecond(tc.tps), WithDimensionBurst(tc.cost)))
				start := time.Now()
				var last time.Duration
				var mu sync.Mutex
				var wg sync.WaitGroup
				for range tc.n {
					wg.Go(func() {
						p, err := b.AcquireCost(context.Background(), Cost{"tokens", tc.cost})
						if err != nil {
							t.Errorf("AcquireCost: %v", err)
							return
						}
						mu.Lock()
						last = max(last, time.Since(start))
						mu.Unlock()
						p.Commit(Cost{"tokens", tc.cost})
						p.Release()
					})
				}
				wg.Wait()
				// n requests, one per interval of the tighter dimension:
				// the last at (n-1) intervals.
				if last != tc.wantLast {
					t.Errorf("binds on %s: last grant at %v, want %v", tc.bindsOn, last, tc.wantLast)
				}
			})
		})
	}
}

// propEvent is one request of the property test.
type propEvent struct {
	arrival int
	granted time.Duration
	est     []int64
	used    []int64 // committed (0 after a failure)
}

// TestAcquireCostPropertyWindowsFIFONoLeak drives a budget with two extra
// dimensions through random costs, deadlines, cancellations, commits
// (under and over the estimate) and failures, and checks that every
// dimension stays within burst + rate×W for every window, that grants keep
// arrival order, and that nothing is leaked.
func TestAcquireCostPropertyWindowsFIFONoLeak(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runDimsProperty(t, seed, false) })
		})
	}
}

// TestStoreDimsPropertyWindowsFIFONoLeak is the same property for three
// budgets on one MemoryStore, each taking a third of the calls: the fleet
// keeps every dimension's bound, serves the calls in the order they came,
// and leaks nothing.
func TestStoreDimsPropertyWindowsFIFONoLeak(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runDimsProperty(t, seed, true) })
		})
	}
}

// runDimsProperty runs 120 random calls with costs through one budget (or,
// with store, three budgets on one MemoryStore) and checks the windows,
// FIFO and that nothing leaks.
func runDimsProperty(t *testing.T, seed uint64, store bool) {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	type dimSpec struct {
		name  string
		rate  Rate
		burst int64
	}
	dims := []dimSpec{
		{"tokens", PerSecond(100 + rng.IntN(900)), 0},
		{"images", Rate{Requests: 1 + rng.IntN(20), Period: time.Second}, 0},
	}
	opts := []Option{WithBurst(1 + rng.IntN(5))}
	for i := range dims {
		dims[i].burst = int64(1 + rng.IntN(dims[i].rate.Requests*2))
		opts = append(opts, WithDimension(dims[i].name, dims[i].rate, WithDimensionBurst(dims[i].burst)))
	}
	backfill := seed%3 == 0 && !store // windows and leaks hold with backfilling too
	if backfill {
		opts = append(opts, WithBackfill())
	}
	reqRate := PerSecond(1 + rng.IntN(50))
	var budgets []*Budget
	if store {
		opts = append(opts, WithStore(NewMemoryStore()))
		for range 3 {
			budgets = append(budgets, MustBudget(reqRate, opts...))
		}
	} else {
		budgets = append(budgets, MustBudget(reqRate, opts...))
	}
	b := budgets[0]
	start := time.Now()
	const n = 120
	events := make([]*propEvent, n)
	var wg sync.WaitGroup
	offset := time.Duration(0)
	for i := range n {
		offset += time.Duration(1+rng.IntN(200)) * time.Millisecond
		at := offset
		est := make([]int64, len(dims))
		var costs []Cost
		for d := range dims {
			if rng.IntN(4) > 0 {
				est[d] = rng.Int64N(dims[d].burst + 1)
				costs = append(costs, Cost{dims[d].name, est[d]})
			}
		}
		mode := rng.IntN(6) // 0 deadline, 1 cancel, 2 fail, else commit
		wait := time.Duration(rng.IntN(3000)) * time.Millisecond
		latency := time.Duration(rng.IntN(2000)) * time.Millisecond
		used := make([]int64, len(dims))
		for d := range dims {
			switch rng.IntN(3) {
			case 0:
				used[d] = est[d]
			case 1:
				used[d] = rng.Int64N(est[d] + 1)
			default:
				used[d] = est[d] + rng.Int64N(dims[d].burst/4+1) // overspend
			}
		}
		wg.Go(func() {
			time.Sleep(at)
			ctx := context.Background()
			var cancel context.CancelFunc = func() {}
			switch mode {
			case 0:
				ctx, cancel = context.WithTimeout(ctx, wait)
			case 1:
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(wait, cancel)
			}
			defer cancel()
			p, err := budgets[i%len(budgets)].AcquireCost(ctx, costs...)
			if err != nil {
				return
			}
			e := &propEvent{arrival: i, granted: time.Since(start), est: est, used: make([]int64, len(dims))}
			events[i] = e
			time.Sleep(latency)
			if mode != 2 {
				actual := make([]Cost, 0, len(dims))
				for d := range dims {
					actual = append(actual, Cost{dims[d].name, used[d]})
				}
				copy(e.used, used)
				p.Commit(actual...)
			}
			p.Release()
		})
	}
	wg.Wait()

	var got []*propEvent
	for _, e := range events {
		if e != nil {
			got = append(got, e)
		}
	}
	if len(got) == 0 {
		t.Fatal("no request was granted")
	}
	// FIFO: grants keep arrival order (backfilling lets some go first).
	for i := 1; i < len(got) && !backfill; i++ {
		if got[i].granted < got[i-1].granted {
			t.Fatalf("FIFO: request %d granted at %v before request %d at %v",
				got[i].arrival, got[i].granted, got[i-1].arrival, got[i-1].granted)
		}
	}
	// Windows: within burst + rate×W, counting each request's committed
	// amount up to its estimate (an overspend is charged when committed,
	// after the grants it could not hold back; it is checked by
	// TestAcquireCostCommitSettles).
	sort.SliceStable(got, func(i, j int) bool { return got[i].granted < got[j].granted })
	windows := []time.Duration{0, 100 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second}
	check := func(name string, rate Rate, burst int64, amount func(*propEvent) int64) {
		for _, w := range windows {
			for i := range got {
				var sum int64
				for j := i; j < len(got) && got[j].granted <= got[i].granted+w; j++ {
					sum += amount(got[j])
				}
				bound := float64(burst) + rate.PerSecondFloat()*w.Seconds()
				if float64(sum) > bound+1e-9 {
					t.Fatalf("%s: %d units in [%v, %v], bound %.1f (rate %v, burst %d)",
						name, sum, got[i].granted, got[i].granted+w, bound, rate, burst)
				}
			}
		}
	}
	check("requests", reqRate, b.pace.burst, func(*propEvent) int64 { return 1 })
	for d := range dims {
		check(dims[d].name, dims[d].rate, dims[d].burst, func(e *propEvent) int64 { return min(e.used[d], e.est[d]) })
	}
	// Nothing leaked: no reservation is left pending, and once the debt is
	// paid, the whole burst of every dimension goes at once.
	b.mu.Lock()
	pending := b.dims.pending.Head
	b.mu.Unlock()
	if pending != nil && !store {
		t.Fatalf("a reservation is left pending: %+v", pending)
	}
	time.Sleep(time.Hour)
	full := []Cost{}
	for d := range dims {
		full = append(full, Cost{dims[d].name, dims[d].burst})
	}
	before := time.Now()
	p, err := b.AcquireCost(context.Background(), full...)
	if err != nil || time.Since(before) != 0 {
		t.Fatalf("after an hour idle, the whole burst waited %v (err %v)", time.Since(before), err)
	}
	p.Release()
}

// TestCommitUnderEstimateRetimesWaiters checks that tokens given back
// while a caller waits for them let it go at once.
func TestCommitUnderEstimateRetimesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(10))) // burst 10
		start := time.Now()
		a, _ := b.AcquireCost(context.Background(), Cost{"tokens", 10})
		done := make(chan time.Duration)
		go func() {
			p, _ := b.AcquireCost(context.Background(), Cost{"tokens", 4}) // waits 0.4 s
			done <- time.Since(start)
			p.Release()
		}()
		time.Sleep(100 * time.Millisecond)
		a.Commit(Cost{"tokens", 8}) // 2 come back: the waiter needs 2 more, 0.2 s from 0
		a.Release()
		if got, want := <-done, 200*time.Millisecond; got != want {
			t.Fatalf("waiter granted at %v, want %v", got, want)
		}
	})
}

// TestAcquireCostCancelInTheMiddleKeepsItsTokensSpent checks the cancel
// rule per dimension: a waiter that leaves from the middle of the queue
// gives nothing back, since a later waiter planned on its tokens.
func TestAcquireCostCancelInTheMiddleKeepsItsTokensSpent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(10))) // burst 10
		start := time.Now()
		grantAt := func(ctx context.Context, n int64, at chan<- time.Duration) {
			p, err := b.AcquireCost(ctx, Cost{"tokens", n})
			if err != nil {
				at <- -1
				return
			}
			at <- time.Since(start)
			p.Commit(Cost{"tokens", n}) // (Release alone would give the tokens back)
			p.Release()
		}
		a, _ := b.AcquireCost(context.Background(), Cost{"tokens", 10}) // t=0
		a.Commit(Cost{"tokens", 10})
		ctx, cancel := context.WithCancel(context.Background())
		bAt, cAt, dAt := make(chan time.Duration, 1), make(chan time.Duration, 1), make(chan time.Duration, 1)
		go grantAt(ctx, 10, bAt) // would go at 1 s
		time.Sleep(time.Millisecond)
		go grantAt(context.Background(), 10, cAt) // 2 s
		time.Sleep(500 * time.Millisecond)
		cancel() // B leaves from the middle
		if got := <-bAt; got != -1 {
			t.Fatalf("cancelled waiter granted at %v", got)
		}
		go grantAt(context.Background(), 10, dAt)
		if got, want := <-cAt, 2*time.Second; got != want {
			t.Errorf("C granted at %v, want %v", got, want)
		}
		if got, want := <-dAt, 3*time.Second; got != want {
			t.Errorf("D granted at %v, want %v (B's tokens stay spent)", got, want)
		}
	})
}

// TestObserveShapesTheMatchingDimension checks that a response's tokens
// quota (x-ratelimit-*-tokens) paces the "tokens" dimension until its reset.
func TestObserveShapesTheMatchingDimension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1000 tokens a second: 10 tokens take 10 ms.
		b := MustBudget(PerSecond(1000), WithoutAdaptive(), WithDimension("tokens", PerSecond(1000)))
		start := time.Now()
		p, _ := b.AcquireCost(context.Background(), Cost{"tokens", 10})
		h := http.Header{}
		h.Set("x-ratelimit-limit-requests", "1000")
		h.Set("x-ratelimit-remaining-requests", "999")
		h.Set("x-ratelimit-reset-requests", "1ms")
		// The server holds 10 of 100 tokens, all back in 11 s (10 s spread, see
		// shape.Of): one token per 100 ms.
		h.Set("x-ratelimit-limit-tokens", "100")
		h.Set("x-ratelimit-remaining-tokens", "10")
		h.Set("x-ratelimit-reset-tokens", "11s")
		p.Observe(http.StatusOK, h)
		p.Commit(Cost{"tokens", 10})
		p.Release()
		for i, want := range []time.Duration{0, time.Second} {
			q, err := b.AcquireCost(context.Background(), Cost{"tokens", 10})
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != want {
				t.Fatalf("step %d: 10 tokens granted at %v, want %v", i, got, want)
			}
			q.Commit(Cost{"tokens", 10})
			q.Release()
		}
		// After the reset the configured pace is back, with no burst credit
		// from the change (10 tokens at once, as the shaped budget held):
		// 1000 tokens take 990 ms more, and 1000 again 1 s.
		time.Sleep(20 * time.Second)
		at := time.Now()
		for i, want := range []time.Duration{990 * time.Millisecond, 1990 * time.Millisecond} {
			q, err := b.AcquireCost(context.Background(), Cost{"tokens", 1000})
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Since(at); got != want {
				t.Fatalf("after the reset, step %d: 1000 tokens granted at %v, want %v", i, got, want)
			}
			q.Commit(Cost{"tokens", 1000})
			q.Release()
		}
	})
}

// TestAcquireOnADimensionBudgetKeepsArrivalOrder checks that a plain
// Acquire (no extra cost) queues behind a caller waiting for tokens, and
// that a disabled budget takes any cost without waiting.
func TestAcquireOnADimensionBudgetKeepsArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(10))) // burst 10
		start := time.Now()
		p, _ := b.AcquireCost(context.Background(), Cost{"tokens", 10})
		p.Commit(Cost{"tokens", 10})
		done := make(chan time.Duration, 1)
		go func() {
			q, _ := b.AcquireCost(context.Background(), Cost{"tokens", 5}) // 0.5 s
			q.Commit(Cost{"tokens", 5})
			done <- time.Since(start)
		}()
		time.Sleep(time.Millisecond)
		q, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := time.Since(start), 500*time.Millisecond; got != want {
			t.Fatalf("Acquire behind a tokens waiter granted at %v, want %v", got, want)
		}
		q.Release()
		<-done
		if _, err := mustDisabled(t).AcquireCost(context.Background(), Cost{"anything", 1 << 40}); err != nil {
			t.Fatalf("Disabled().AcquireCost = %v, want nil", err)
		}
	})
}

// TestCommitHugeUsageSaturates checks that a usage figure whose debt
// overflows int64 nanoseconds leaves the dimension in debt rather than
// wrapping the debt negative and admitting everyone at once.
func TestCommitHugeUsageSaturates(t *testing.T) {
	for _, huge := range []int64{2e13, 1 << 53, math.MaxInt64} {
		synctest.Test(t, func(t *testing.T) {
			b := MustBudget(PerSecond(1000), WithDimension("tokens", PerMinute(90_000), WithDimensionBurst(80_000)))
			p, err := b.AcquireCost(context.Background(), Cost{"tokens", 80_000})
			if err != nil {
				t.Fatal(err)
			}
			p.Commit(Cost{"tokens", huge})
			p.Release()
			time.Sleep(time.Hour)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if q, err := b.AcquireCost(ctx, Cost{"tokens", 1}); !IsBudgetError(err) {
				q.Release()
				t.Errorf("after Commit(%d tokens) and an hour, AcquireCost(1) = %v, want a budget error (still in debt)", huge, err)
			}
		})
	}
}
