package core

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
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
