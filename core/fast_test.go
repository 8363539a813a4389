package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// laneOpen reports whether b's fast lane is open.
func laneOpen(b *Budget) bool {
	l := b.lane.Load()
	return l != nil && l.tat.Load() != closedLane
}

// fifoModel is the scheduler's contract written out plainly: GCRA at
// interval and burst, turns in arrival order, a cancelled reservation
// given back when nobody reserved after it.
type fifoModel struct {
	tat, interval, burst, last int64
}

func (m *fifoModel) reserve(at int64) (send, before, after int64) {
	send = max(at, m.last, m.tat-(m.burst-1)*m.interval)
	before = m.tat
	m.tat = max(m.tat, send) + m.interval
	m.last = send
	return send, before, m.tat
}

func (m *fifoModel) cancel(before, after int64) {
	if m.tat == after {
		m.tat = before
	}
}

// TestFastLaneAndQueueKeepExactGCRAAndArrivalOrder drives calls one at a
// time through the switch between the fast lane and the queue — a burst
// admitted without the lock, a queue forming behind it, a queued caller
// cancelled, the queue draining, the lane opening again — and checks every
// send time against the plain model: exact GCRA, arrival order, exact
// give-back.
func TestFastLaneAndQueueKeepExactGCRAAndArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = int64(100 * time.Millisecond)
		b := MustBudget(PerSecond(10), WithBurst(3))
		m := &fifoModel{tat: idle, interval: interval, burst: 3, last: idle}

		type event struct {
			at     time.Duration
			cancel int // the call to cancel; 0: a new call
		}
		script := []event{
			{0, 0}, {0, 0}, {0, 0}, // the burst: the first opens the lane, the others go through it
			{0, 0}, {0, 0}, // queued at 100 and 200 ms
			{50 * time.Millisecond, 0},                           // queued at 300 ms…
			{60 * time.Millisecond, 6},                           // …and cancelled: the last, so its turn comes back
			{150 * time.Millisecond, 0},                          // the cancelled turn, 300 ms
			{time.Second, 0}, {time.Second, 0}, {time.Second, 0}, // the queue drained: a whole burst again
			{time.Second, 0},                           // 1.1 s
			{2 * time.Second, 0}, {2 * time.Second, 0}, // lane open again
		}
		type result struct {
			sent int64
			err  error
		}
		var (
			mu      sync.Mutex
			got     = map[int]result{}
			cancels = map[int]context.CancelFunc{}
			want    = map[int]int64{}
			turns   = map[int][2]int64{}
		)
		start, origin := time.Now(), b.now() // (the budget's clock starts at a second)
		n := 0
		for _, e := range script {
			time.Sleep(time.Until(start.Add(e.at)))
			now := int64(e.at)
			if e.cancel > 0 {
				cancels[e.cancel]()
				tb := turns[e.cancel]
				m.cancel(tb[0], tb[1])
				delete(want, e.cancel)
				synctest.Wait()
				continue
			}
			n++
			i := n
			send, before, after := m.reserve(now)
			want[i], turns[i] = send, [2]int64{before, after}
			ctx, cancel := context.WithCancel(context.Background())
			cancels[i] = cancel
			go func() {
				p, err := b.Acquire(ctx)
				mu.Lock()
				got[i] = result{p.sent - origin, err}
				mu.Unlock()
			}()
			synctest.Wait() // admitted, or parked in the queue
			switch i {
			case 3, 13:
				if !laneOpen(b) {
					t.Errorf("call %d: the lane is closed, want it open (nobody waits)", i)
				}
			case 4, 11:
				if laneOpen(b) {
					t.Errorf("call %d: the lane is open while a caller waits", i)
				}
			}
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		for i := 1; i <= n; i++ {
			r := got[i]
			w, ok := want[i]
			switch {
			case !ok && r.err != context.Canceled:
				t.Errorf("call %d: %v, want context.Canceled", i, r.err)
			case ok && (r.err != nil || r.sent != w):
				t.Errorf("call %d: sent at %v (err %v), want %v", i, time.Duration(r.sent), r.err, time.Duration(w))
			}
		}
		for _, c := range cancels {
			c()
		}
	})
}

// TestFastLaneRacingTheQueueKeepsTheBound races goroutines through a
// budget whose lane opens and closes as a queue forms and drains (some
// callers give up while they wait), and checks that the send times of
// all the calls admitted, by either path, never exceed the GCRA bound: in
// any window of length W, at most burst + W/interval.
func TestFastLaneRacingTheQueueKeepsTheBound(t *testing.T) {
	for seed := range uint64(4) {
		synctest.Test(t, func(t *testing.T) {
			const (
				interval = int64(time.Millisecond)
				burst    = 8
			)
			b := MustBudget(PerSecond(1000), WithBurst(burst))
			var (
				mu     sync.Mutex
				sent   []int64
				opened int
				wg     sync.WaitGroup
			)
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 60 {
						// Mostly idle gaps (the lane opens), now and then a
						// rush (a queue forms).
						if rng.IntN(4) > 0 {
							time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
						}
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(20))*time.Millisecond)
						p, err := b.Acquire(ctx)
						cancel()
						if laneOpen(b) {
							mu.Lock()
							opened++
							mu.Unlock()
						}
						if err != nil {
							continue
						}
						mu.Lock()
						sent = append(sent, p.sent)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if opened == 0 || len(sent) == 16*60 {
				t.Fatalf("seed %d: lane seen open %d times, %d of %d calls admitted: the test must cross the switch both ways", seed, opened, len(sent), 16*60)
			}
			slices.Sort(sent)
			for i := range sent {
				for j := i; j < len(sent); j++ {
					if n, limit := int64(j-i+1), burst+(sent[j]-sent[i])/interval; n > limit {
						t.Fatalf("seed %d: %d calls sent in [%v, %v], the bound is %d", seed, n, time.Duration(sent[i]), time.Duration(sent[j]), limit)
					}
				}
			}
		})
	}
}

// TestFastLaneClosesForAPauseAndANewRate checks that what the locked path
// decides — a server's pause shorter than the burst's span, a new rate —
// holds for the calls that would have gone through the lane.
func TestFastLaneClosesForAPauseAndANewRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(100), WithBurst(200), WithoutAdaptive()) // a burst spanning 2 s, no cut to mask the pause
		ctx := context.Background()
		for range 2 {
			if _, err := b.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if !laneOpen(b) {
			t.Fatal("the lane is closed after two calls with nobody waiting")
		}
		b.Observe(429, map[string][]string{"Retry-After": {"1"}}, time.Time{})
		if laneOpen(b) {
			t.Error("the lane is open in a server's pause")
		}
		p, err := b.Acquire(ctx)
		if err != nil || p.sent < int64(time.Second) {
			t.Fatalf("a call during a 1 s pause went at %v (err %v), want at its end", time.Duration(p.sent), err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(100)) // the burst follows the rate
		ctx := context.Background()
		for range 2 {
			if _, err := b.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Second) // a whole burst back
		if err := b.SetRate(Rate{Requests: 10, Period: time.Second}); err != nil {
			t.Fatal(err)
		}
		// The new burst, 10, goes at once; the 11th waits an interval.
		start := b.now()
		var at []time.Duration
		for range 11 {
			p, err := b.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Duration(p.sent-start))
		}
		if at[9] != 0 || at[10] != 100*time.Millisecond {
			t.Errorf("after SetRate(10/s) the 10th call went at +%v and the 11th at +%v, want +0s and +100ms", at[9], at[10])
		}
	})
}

// TestFastLaneStaysClosedWhileCallersWait checks the lane's first rule: a
// response observed while callers wait leaves it closed.
func TestFastLaneStaysClosedWhileCallersWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithBurst(1))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := b.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		go b.Acquire(ctx) // waits 100 ms
		synctest.Wait()
		b.Observe(200, nil, time.Time{})
		if laneOpen(b) {
			t.Error("the lane is open while a caller waits")
		}
		cancel()
		synctest.Wait()
	})
}

// TestFastLaneAdmitsNoMoreThanTheEstimateLets checks that the lane,
// opened while the server's report leaves two requests, admits those two
// and leaves the next call to the locked path, which holds it for the
// estimate of the quota's refill. With a cap, no lane: a call that can go
// at once takes its slot and its turn in one critical section
// (admitCapped), which must ask the estimate all the same.
func TestFastLaneAdmitsNoMoreThanTheEstimateLets(t *testing.T) {
	for _, slots := range []int{0, 8} {
		t.Run(fmt.Sprintf("%d slots", slots), func(t *testing.T) { admitsNoMoreThanTheEstimateLets(t, slots) })
	}
}

func admitsNoMoreThanTheEstimateLets(t *testing.T, slots int) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithoutAdaptive(), WithMaxInFlight(slots))
		ctx := context.Background()
		if _, err := b.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		// Two left of 10 (the configured burst has 9).
		b.Observe(200, map[string][]string{"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"2"}, "X-Ratelimit-Reset": {"1"}}, time.Time{})
		if err := b.Check(ctx); err != nil {
			t.Fatal(err)
		}
		if slots == 0 && !laneOpen(b) {
			t.Error("the lane is closed while the estimate lets two go at once")
		}
		start := b.now()
		var sent []time.Duration
		for range 3 {
			p, err := b.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sent = append(sent, time.Duration(p.sent-start))
		}
		if sent[0] != 0 || sent[1] != 0 || sent[2] == 0 {
			t.Errorf("sent at %v, want the two left at once and the third held", sent)
		}
	})
}

// TestAdmitAllocatesNothing checks the admit path's promise, through the
// fast lane and through the locked path (the lane closed before every
// call): a call that goes at once allocates nothing.
func TestAdmitAllocatesNothing(t *testing.T) {
	b := MustBudget(Rate{Requests: 1_000_000_000, Period: time.Second})
	ctx := context.Background()
	admit := func() {
		p, err := b.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	if n := testing.AllocsPerRun(1000, admit); n != 0 {
		t.Errorf("through the lane: %v allocs per call, want 0", n)
	}
	locked := func() {
		b.lock() // closes the lane: the call takes the locked path
		b.unlock()
		if laneOpen(b) {
			t.Fatal("the lane is open after lock")
		}
		admit()
	}
	if n := testing.AllocsPerRun(1000, locked); n != 0 {
		t.Errorf("through the locked path: %v allocs per call, want 0", n)
	}
	capped := MustBudget(Rate{Requests: 1_000_000_000, Period: time.Second}, WithMaxInFlight(64))
	if n := testing.AllocsPerRun(1000, func() {
		p, err := capped.Acquire(ctx) // a slot and the turn at once (admitCapped)
		if err != nil || p.slot.idx1 == 0 {
			t.Fatalf("capped Acquire: %v, slot %v", err, p.slot)
		}
		p.Release()
	}); n != 0 {
		t.Errorf("with a cap: %v allocs per call, want 0", n)
	}
}

// TestFastLaneReopenedWhileCallsRace races calls through the lane against
// answers that close and reopen it (each Observe takes the lock and opens
// the lane again at the estimate): under -race, every field a call reads
// without the lock is one the reopening may write. No timing is checked;
// the detector is the assertion.
func TestFastLaneReopenedWhileCallsRace(t *testing.T) {
	b := MustBudget(Rate{Requests: 1_000_000_000, Period: time.Second})
	h := http.Header{"X-Ratelimit-Limit": {"1000000"}, "X-Ratelimit-Remaining": {"999999"}, "X-Ratelimit-Reset": {"1"}}
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				p, err := b.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				p.Observe(200, h)
				p.Release()
			}
		})
	}
	wg.Wait()
}
