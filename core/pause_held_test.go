package core

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// grantedUnrun returns a budget of 10/s (burst 1) whose first turn went at
// 0, and the waiter of the second call (its deadline at ctx's), granted at
// 100 ms: its signal sent, its goroutine not run yet — the last callers of
// a burst on a loaded machine — and the first call's permit, whose
// response comes now.
func grantedUnrun(t *testing.T, ctx context.Context) (*Budget, *waiter, Permit) {
	t.Helper()
	b, err := NewBudget(PerSecond(10), WithBurst(1))
	if err != nil {
		t.Fatal(err)
	}
	first, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, w, err := b.takeTurn(b.now(), b.deadline(ctx), nil, 0)
	if err != nil || w == nil {
		t.Fatalf("the second call: waiter %v, %v; want it queued", w, err)
	}
	time.Sleep(100 * ms) // its turn: the queue's timer grants it
	synctest.Wait()
	if w.state != granted {
		t.Fatalf("the second call is %v at 100ms, want granted", w.state)
	}
	return b, w, first
}

// A call granted its turn before a server pause became known, whose
// goroutine had not run when it did, waits for the pause's end instead of
// going into it — and goes first then, ahead of a caller who queued during
// the pause. (Without holdBack it went at once, into the pause: over
// loopback, up to 7 requests of a burst of 99.)
func TestGrantedBeforePauseWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w, first := grantedUnrun(t, context.Background())
		start := time.Now()
		first.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}) // the pause, until 2.1 s
		later := make(chan time.Duration, 1)
		go func() { // a caller who queues during the pause
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Error(err)
			}
			p.Release()
			later <- time.Since(start)
		}()
		synctest.Wait()
		if _, err := b.wait(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		went := time.Since(start)
		if went != 2*time.Second {
			t.Errorf("the call granted before the pause went at %v; want at its end, 2s (0: into it)", went)
		}
		if other := <-later; other <= went {
			t.Errorf("the caller queued during the pause went at %v, the call granted before it at %v; want it after", other, went)
		}
	})
}

// One whose context ends before the pause does fails at once, as any
// waiter does, and sends nothing; one whose pause ended before it ran
// goes at once.
func TestGrantedBeforePauseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		b, w, first := grantedUnrun(t, ctx)
		first.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
		start := time.Now()
		_, err := b.wait(ctx, w)
		var rl *RateLimitError
		if !errors.As(err, &rl) || time.Since(start) != 0 {
			t.Errorf("after %v: %v; want a RateLimitError at once", time.Since(start), err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b, w, first := grantedUnrun(t, context.Background())
		first.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
		time.Sleep(time.Second) // the pause is over before the call runs
		start := time.Now()
		if _, err := b.wait(context.Background(), w); err != nil || time.Since(start) != 0 {
			t.Errorf("after %v: %v; want it gone at once", time.Since(start), err)
		}
	})
}
