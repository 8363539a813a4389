package core

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
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
	if n := cap(b.slots.gen) + cap(b.slots.free); n != 0 {
		t.Errorf("NewBudget(WithMaxInFlight(MaxInt32)) allocated %d slots up front, want 0", n)
	}
	p1, err1 := b.Acquire(context.Background())
	p2, err2 := b.Acquire(context.Background())
	if err1 != nil || err2 != nil || b.InFlight() != 2 {
		t.Fatalf("two Acquires = %v, %v with InFlight %d, want two permits", err1, err2, b.InFlight())
	}
	p1.Release()
	p3, _ := b.Acquire(context.Background()) // reuses the freed slot
	if len(b.slots.gen) != 2 {
		t.Errorf("after a release and a third Acquire, %d slots exist, want 2 (the freed one reused)", len(b.slots.gen))
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

// TestSlotWaitersKeepArrivalOrderToTheirTurns: with WithMaxInFlight, the
// turns go in the order the callers called Acquire, across the wait for a
// slot and the wait for the turn. A caller handed a slot has its turn by
// then: neither a caller queued behind it for a slot nor one arriving
// after it, which finds a slot free, takes a turn before it, however late
// its goroutine runs. The observer holds the first caller's goroutine
// (its SlotWait event, 100 ms) while the others come and go; an
// implementation that reserves the turn in the caller's goroutine after
// the slot lets both go first.
func TestSlotWaitersKeepArrivalOrderToTheirTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		held := make(chan struct{})
		var once sync.Once
		obs := func(e Event) {
			if e.Reason == SlotWait && e.Wait == 100*time.Millisecond {
				once.Do(func() { <-held }) // the first caller, between its slot and whatever follows
			}
		}
		// Three slots, a burst of three at one a second: the burst is spent
		// at once, and the turns after it come a second apart.
		b := MustBudget(Rate{Requests: 1, Period: time.Second}, WithBurst(3), WithMaxInFlight(3), WithObserver(obs))
		base := b.now()
		var open [3]Permit
		for i := range open {
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			open[i] = p
		}
		var (
			wg   sync.WaitGroup
			sent [3]time.Duration // by the order of the Acquire calls
		)
		acquire := func(i int) {
			wg.Go(func() {
				p, err := b.Acquire(context.Background())
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
					return
				}
				sent[i] = time.Duration(p.sent - base)
				p.Release()
			})
			synctest.Wait() // it waits (or is held) before the next one calls
		}
		acquire(0) // waits for a slot from 0 s
		time.Sleep(50 * time.Millisecond)
		acquire(1) // waits for a slot from 50 ms
		time.Sleep(50 * time.Millisecond)
		for _, p := range open {
			p.Release() // two slots to the waiters, the third free
		}
		acquire(2) // at 100 ms: a slot is free
		close(held)
		wg.Wait()
		for i := 1; i < len(sent); i++ {
			if sent[i] <= sent[i-1] {
				t.Fatalf("turns at %v, %v, %v (callers by order of Acquire): caller %d went before caller %d",
					sent[0], sent[1], sent[2], i, i-1)
			}
		}
	})
}

// TestCappedTurnsKeepArrivalOrderRandom: callers arrive one by one at a
// capped budget, hold their slots for random times (often freed at the same
// instant), and some give up (cancelled, or a deadline); every caller
// admitted was sent no earlier than one that called Acquire before it, and
// never more at once than the cap. A fresh seed each run (HEADGATE_SEED=n
// replays one).
func TestCappedTurnsKeepArrivalOrderRandom(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("HEADGATE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("HEADGATE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (HEADGATE_SEED=%d replays it)", seed, seed)
	for round := range uint64(50) {
		synctest.Test(t, func(t *testing.T) { cappedArrivalRun(t, seed, round) })
	}
}

func cappedArrivalRun(t *testing.T, seed, round uint64) {
	rng := rand.New(rand.NewPCG(seed, round))
	const callers, slots = 80, 3
	b := MustBudget(Rate{Requests: 20, Period: time.Second}, WithBurst(1+rng.IntN(3)), WithMaxInFlight(slots))
	base := b.now()
	var (
		mu         sync.Mutex
		sent       = make([]int64, callers) // 0: not admitted
		open, peak int
		wg         sync.WaitGroup
	)
	for i := range callers {
		time.Sleep(time.Duration(1+rng.IntN(20)) * time.Millisecond)
		hold := time.Duration(rng.IntN(8)) * 25 * time.Millisecond // (on a grid: slots freed at one instant)
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		switch rng.IntN(6) {
		case 0:
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(time.Duration(rng.IntN(40))*25*time.Millisecond, cancel)
		case 1:
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(40))*25*time.Millisecond)
		}
		wg.Go(func() {
			defer cancel()
			p, err := b.Acquire(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			sent[i] = p.sent - base + 1
			open++
			peak = max(peak, open)
			mu.Unlock()
			time.Sleep(hold)
			mu.Lock()
			open--
			mu.Unlock()
			p.Release()
		})
	}
	wg.Wait()
	last, lastI := int64(0), -1
	for i, s := range sent {
		if s == 0 {
			continue
		}
		if s < last {
			t.Fatalf("seed %d round %d: caller %d sent at %v, before caller %d who called Acquire earlier (%v)",
				seed, round, i, time.Duration(s-1), lastI, time.Duration(last-1))
		}
		last, lastI = s, i
	}
	if peak > slots {
		t.Fatalf("seed %d round %d: %d open at once, cap %d", seed, round, peak, slots)
	}
	if n := b.InFlight(); n != 0 {
		t.Fatalf("seed %d round %d: InFlight = %d after every release", seed, round, n)
	}
}

// slotLine is a budget of one slot at one turn a second, its slot held
// (open) since the start, with two callers in line for it: the first with
// ctx, the second with a context that never ends. first gives the first's
// error; second the second's send time, on the budget's clock from the
// start. Called inside a synctest bubble.
type slotLine struct {
	b      *Budget
	open   Permit
	first  chan error
	second chan time.Duration
}

func newSlotLine(t *testing.T, burst int, ctx context.Context) slotLine {
	t.Helper()
	b := MustBudget(Rate{Requests: 1, Period: time.Second}, WithBurst(burst), WithMaxInFlight(1))
	l := slotLine{b: b, first: make(chan error, 1), second: make(chan time.Duration, 1)}
	base := b.now()
	var err error
	if l.open, err = b.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() { _, err := b.Acquire(ctx); l.first <- err }()
	synctest.Wait()
	go func() {
		p, err := b.Acquire(context.Background())
		if err != nil {
			t.Errorf("second in line: %v", err)
		}
		l.second <- time.Duration(p.sent - base)
		p.Release()
	}()
	synctest.Wait()
	return l
}

// TestSlotWaiterCancelledTakesNothing: a caller cancelled while it waits
// for a slot leaves nothing taken: the slot freed later goes to the caller
// behind it, with the turn the burst still held.
func TestSlotWaiterCancelledTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		l := newSlotLine(t, 2, ctx) // the slot held, and one turn of the burst spent
		time.Sleep(100 * time.Millisecond)
		cancel()
		if err := <-l.first; err != context.Canceled || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("cancelled slot waiter: %v after %v, want context.Canceled at once (100ms)", err, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
		l.open.Release()
		if got := <-l.second; got != 200*time.Millisecond {
			t.Fatalf("the caller behind the cancelled one went at %v, want 200ms (the slot freed, the burst's second turn)", got)
		}
		synctest.Wait() // (the second releases its permit after it reports its turn)
		if n := l.b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d, want 0", n)
		}
	})
}

// TestSlotHandedThenCancelledGivesBoth: a caller handed a slot waits for
// the turn reserved with it; cancelled then, it gives both back: the slot
// goes to the caller behind it, and with it the same turn.
func TestSlotHandedThenCancelledGivesBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		l := newSlotLine(t, 1, ctx) // the slot held and the burst spent: the next turn at 1s
		time.Sleep(100 * time.Millisecond)
		l.open.Release() // the slot to the first caller, with its turn at 1s
		synctest.Wait()
		if n := l.b.InFlight(); n != 1 {
			t.Fatalf("InFlight = %d after the slot was handed over, want 1", n)
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
		if err := <-l.first; err != context.Canceled || time.Since(start) != 200*time.Millisecond {
			t.Fatalf("cancelled caller: %v after %v, want context.Canceled at once (200ms)", err, time.Since(start))
		}
		if got := <-l.second; got != time.Second {
			t.Fatalf("the caller behind the cancelled one went at %v, want 1s (the turn given back)", got)
		}
		synctest.Wait() // (the second releases its permit after it reports its turn)
		if n := l.b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d, want 0", n)
		}
	})
}

// TestSlotHandedPastTheDeadlineFailsAtOnce: a caller handed a slot whose
// turn comes at or after its deadline fails at once, with a
// *RateLimitError, and hands the slot on: the caller behind it takes it,
// and the turn.
func TestSlotHandedPastTheDeadlineFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		l := newSlotLine(t, 1, ctx) // the next turn at 1s
		time.Sleep(100 * time.Millisecond)
		l.open.Release()
		var rl *RateLimitError
		if err := <-l.first; !errors.As(err, &rl) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("caller handed a slot, its turn past its deadline: %v after %v, want a RateLimitError at once (100ms)", err, time.Since(start))
		}
		if got := <-l.second; got != time.Second {
			t.Fatalf("the caller behind went at %v, want 1s", got)
		}
		synctest.Wait() // (the second releases its permit after it reports its turn)
		if n := l.b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d, want 0", n)
		}
	})
}
