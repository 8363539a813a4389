package redisstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// ended reports whether ctx's Done is closed, and its error.
func ended(ctx context.Context) (bool, error) {
	select {
	case <-ctx.Done():
		return true, ctx.Err()
	default:
		return false, ctx.Err()
	}
}

// A call's context ends at its start plus the timeout, as
// context.WithTimeout's does: not a nanosecond before, with
// DeadlineExceeded, and carries its parent's values.
func TestDeadlinesEndCallsAtTheirDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := &deadlines{d: 200 * time.Millisecond}
		type key struct{}
		parent := context.WithValue(context.Background(), key{}, "v")
		start := time.Now()
		a := ds.start(parent)
		time.Sleep(50 * time.Millisecond)
		b := ds.start(parent)
		if dl, ok := a.Deadline(); !ok || !dl.Equal(start.Add(200*time.Millisecond)) {
			t.Fatalf("a's deadline %v, %v; want %v", dl, ok, start.Add(200*time.Millisecond))
		}
		if a.Value(key{}) != "v" {
			t.Errorf("a lost its parent's value")
		}
		time.Sleep(150*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if done, err := ended(a); done || err != nil {
			t.Fatalf("a ended %v (%v) a nanosecond before its deadline", done, err)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if done, err := ended(a); !done || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a at its deadline: ended %v, %v; want DeadlineExceeded", done, err)
		}
		if done, _ := ended(b); done {
			t.Fatal("b ended with a, 50ms before its deadline")
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if done, err := ended(b); !done || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("b at its deadline: ended %v, %v; want DeadlineExceeded", done, err)
		}
		ds.end(a)
		ds.end(b)
		if a.Err() != context.DeadlineExceeded {
			t.Errorf("end after the deadline changed a's error to %v", a.Err())
		}
	})
}

// Serial calls, each ended well within the timeout, set the timer once
// per timeout, not once per call; with no call in flight it is not set
// again (no wake-up while idle). A call ended before its deadline is
// cancelled, never timed out, and leaves nothing listed.
func TestDeadlinesSetOneTimerForCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := &deadlines{d: 200 * time.Millisecond}
		var last context.Context
		for range 1000 { // 1000 calls of 100µs: 100ms, half a timeout
			last = ds.start(context.Background())
			time.Sleep(100 * time.Microsecond)
			ds.end(last)
		}
		if done, err := ended(last); !done || err != context.Canceled {
			t.Fatalf("an ended call: ended %v, %v; want Canceled", done, err)
		}
		ds.mu.Lock()
		arms, head := ds.arms, ds.head
		ds.mu.Unlock()
		if arms != 1 || head != nil {
			t.Fatalf("1000 calls set the timer %d times (want 1), head %v (want none)", arms, head)
		}
		time.Sleep(time.Second) // the timer fires once, finds nothing, and stays idle
		synctest.Wait()
		ds.mu.Lock()
		arms, armed := ds.arms, ds.armed
		ds.mu.Unlock()
		if arms != 1 || armed {
			t.Fatalf("idle: the timer was set %d times (want 1), armed %v", arms, armed)
		}
		// A call in flight when the timer fires sets it for that call.
		c := ds.start(context.Background())
		time.Sleep(100 * time.Millisecond)
		d := ds.start(context.Background())
		time.Sleep(100 * time.Millisecond) // c's deadline
		synctest.Wait()
		if done, _ := ended(c); !done {
			t.Fatal("c did not end at its deadline")
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if done, err := ended(d); !done || err != context.DeadlineExceeded {
			t.Fatalf("d, listed behind c: ended %v, %v; want DeadlineExceeded at its own deadline", done, err)
		}
	})
}

// A parent that ends first ends the call with the parent's error; a
// parent whose deadline comes first is the call's context as it is.
func TestDeadlinesFollowTheParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := &deadlines{d: 200 * time.Millisecond}
		parent, cancel := context.WithCancel(context.Background())
		c := ds.start(parent)
		cancel()
		synctest.Wait()
		if done, err := ended(c); !done || err != context.Canceled {
			t.Fatalf("parent cancelled: ended %v, %v; want Canceled", done, err)
		}
		ds.end(c)
		ds.mu.Lock()
		head := ds.head
		ds.mu.Unlock()
		if head != nil {
			t.Fatal("a call whose parent ended is still listed")
		}

		short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancelShort()
		if got := ds.start(short); got != short {
			t.Fatalf("a parent with an earlier deadline got %T, want the parent itself", got)
		}
		ds.end(short) // a no-op for a parent
		if short.Err() != nil {
			t.Fatal("end cancelled the caller's own context")
		}
	})
}

// Calls from many goroutines, some timing out, some ended, some with
// parents cancelled: every context ends once with the right error and
// nothing stays listed (run under -race).
func TestDeadlinesConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := &deadlines{d: 10 * time.Millisecond}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					parent, cancel := context.WithCancel(context.Background())
					c := ds.start(parent)
					switch (g + i) % 3 {
					case 0: // ends first
						time.Sleep(time.Millisecond)
					case 1: // times out
						time.Sleep(11 * time.Millisecond)
						if err := c.Err(); err != context.DeadlineExceeded {
							t.Errorf("past its deadline: %v", err)
						}
					case 2: // the parent ends first
						cancel()
						<-c.Done()
						if err := c.Err(); err != context.Canceled {
							t.Errorf("parent cancelled: %v", err)
						}
					}
					ds.end(c)
					cancel()
				}
			})
		}
		wg.Wait()
		ds.mu.Lock()
		defer ds.mu.Unlock()
		if ds.head != nil || ds.tail != nil {
			t.Fatal("calls left listed")
		}
	})
}
