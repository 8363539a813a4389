package core

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// A stall of the whole process (a loaded machine) that keeps the queue's
// timer from firing for longer than the burst's span sends the overdue
// turns together when it ends. A GCRA server paced as the budget paces,
// idle for the stall, holds no more than its burst then: every turn is
// checked against such a server (burst 10, 100/s, each request reaching it
// the instant its turn is granted). Without stalledLocked the 15 turns
// overdue after a 150 ms stall went at once, and 5 were refused.
func TestStallSendsNoMoreThanTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const burst, calls = 10, 30
		b, err := NewBudget(PerSecond(100), WithBurst(burst))
		if err != nil {
			t.Fatal(err)
		}
		server := newGCRA(int64(10*ms), burst)
		refused := 0
		arrive := func(at int64) {
			if at < server.earliest(1) {
				refused++
				return
			}
			server.reserveN(at, 1)
		}
		for range burst { // the burst, at 0
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			arrive(b.now())
			p.Release()
		}
		ws := make([]*waiter, calls)
		for i := range ws { // the rest queue, one a paced interval from 10 ms on
			_, w, err := b.takeTurn(b.now(), never, nil, 0)
			if err != nil || w == nil {
				t.Fatalf("call %d: waiter %v, %v; want it queued", i, w, err)
			}
			ws[i] = w
		}
		// The stall: the queue's timer does not fire for 150 ms (still
		// armed, so nothing sets it again), then fires late.
		b.mu.Lock()
		b.timer.Stop()
		b.mu.Unlock()
		time.Sleep(150 * ms)
		b.onTimer()
		at := b.now()
		together := 0
		b.mu.Lock() // (the waiters' fields are the budget's, under mu)
		for _, w := range ws {
			if w.state == granted && w.granted == at {
				together++
			}
		}
		b.mu.Unlock()
		time.Sleep(time.Second) // the rest, granted by the timer
		synctest.Wait()
		b.mu.Lock()
		defer b.mu.Unlock()
		for i, w := range ws {
			if w.state != granted {
				t.Fatalf("call %d is %v after the batch, want granted", i, w.state)
			}
			arrive(w.granted)
		}
		if together > burst || refused > 0 {
			t.Errorf("after a 150 ms stall %d turns went at once (want at most the burst, %d), and the server refused %d of %d (want 0)",
				together, burst, refused, burst+calls)
		}
		if last, ideal := time.Duration(ws[calls-1].granted), 150*ms+time.Duration(calls-burst)*10*ms; last > ideal {
			t.Errorf("the last turn went at %v; want by %v: the burst at the stall's end, the rest paced after it", last, ideal)
		}
	})
}

// The same through the transport, in a batch: 300 calls from 100
// goroutines told the exact rate and burst of quotatest's GCRA server
// (100/s, burst 10), each refusal tried again at once, and the process
// stalled for 150 ms at 1 s. Without stalledLocked the server refused the
// 5 overdue turns beyond its burst.
func TestStallBatchAgainstGCRA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toYear2026()
		p, err := quotatest.New(quotatest.Config{Requests: 100, Period: time.Second, Burst: 10,
			Headers: quotatest.XRateLimitDelta | quotatest.RetryAfterSeconds})
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBudget(PerSecond(100), WithBurst(10))
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: NewTransport(p.Transport(), b)}
		start := time.Now()
		go func() { // the stall: the queue's timer held for 150 ms, then fired late
			time.Sleep(time.Second + 5*ms) // (between two turns: the timer is not firing)
			b.mu.Lock()
			b.timer.Stop()
			b.mu.Unlock()
			time.Sleep(150 * ms)
			b.onTimer()
		}()
		const n = 300
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				for int(next.Add(1)) <= n {
					for {
						resp, err := client.Get("http://api.test/v1/items")
						if err != nil {
							t.Error(err)
							return
						}
						resp.Body.Close()
						if resp.StatusCode == http.StatusOK {
							break
						}
					}
				}
			})
		}
		wg.Wait()
		makespan := time.Since(start)
		refused := 0
		for _, a := range p.Arrivals() {
			if a.Outcome != quotatest.Admitted {
				refused++
			}
		}
		// The floor: the ideal, and what the stall lost beyond the burst's span.
		floor := time.Duration(n-10)*10*ms + 150*ms - 100*ms
		t.Logf("429s %d, makespan %v (floor %v)", refused, makespan, floor)
		if refused > 0 {
			t.Errorf("the server refused %d calls; want none: after the stall no more than its burst goes at once", refused)
		}
		if float64(makespan) > 1.01*float64(floor) {
			t.Errorf("makespan %v; want within 1.01x the floor %v", makespan, floor)
		}
	})
}
