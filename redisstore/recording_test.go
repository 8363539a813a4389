package redisstore

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
)

// recording is a core.Store that delegates every call to the real store
// it wraps and records the turns it granted and the ones given back. The
// tests check pacing bounds on these turns — on Redis's clock, exactly —
// instead of on wall-clock times, which a loaded machine delays and
// bunches. It is not a mock: every answer is the real store's.
type recording struct {
	core.Store
	mu       *sync.Mutex
	granted  *[]core.Turn
	refunded *map[string]bool
	changed  chan struct{} // receives (without blocking) after each granted turn
	paused   *int64        // Unix ns (local clock) when Report first returned a pause
}

// record wraps s. Stores wrapped by the same recorder (share) record into
// one log.
func record(s core.Store) *recording {
	return &recording{
		Store: s, mu: new(sync.Mutex),
		granted: new([]core.Turn), refunded: &map[string]bool{},
		changed: make(chan struct{}, 1), paused: new(int64),
	}
}

// share wraps s into the log of r.
func (r *recording) share(s core.Store) *recording {
	c := *r
	c.Store = s
	return &c
}

// turnSlot is where a call asks the recorder to put its granted turn: the
// test passes one in the context of the call (withSlot).
type turnSlot struct {
	mu   sync.Mutex
	turn core.Turn
}

type slotKey struct{}

func withSlot(ctx context.Context) (context.Context, *turnSlot) {
	s := new(turnSlot)
	return context.WithValue(ctx, slotKey{}, s), s
}

// last is the last turn granted to the call holding s.
func (s *turnSlot) last() core.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

func (r *recording) Take(ctx context.Context, p core.Pace, maxWait time.Duration) (core.Turn, error) {
	t, err := r.Store.Take(ctx, p, maxWait)
	if err == nil && t.Granted {
		r.mu.Lock()
		*r.granted = append(*r.granted, t)
		r.mu.Unlock()
		if s, ok := ctx.Value(slotKey{}).(*turnSlot); ok {
			s.mu.Lock()
			s.turn = t
			s.mu.Unlock()
		}
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
	return t, err
}

func (r *recording) Refund(ctx context.Context, t core.Turn) error {
	err := r.Store.Refund(ctx, t)
	r.mu.Lock()
	(*r.refunded)[t.Token] = true
	r.mu.Unlock()
	return err
}

func (r *recording) Report(ctx context.Context, rep core.Report) (core.StoreStatus, error) {
	st, err := r.Store.Report(ctx, rep)
	if err == nil && st.Pause > 0 {
		now := time.Now().UnixNano()
		r.mu.Lock()
		if *r.paused == 0 {
			*r.paused = now
		}
		r.mu.Unlock()
	}
	return st, err
}

// pausedAt is when (Unix ns, local clock) a Report first returned with a
// pause in the store, or 0: the store had the pause by then.
func (r *recording) pausedAt() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.paused
}

// turns returns the granted turns, in the order they were granted.
func (r *recording) turns() []core.Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.Turn(nil), (*r.granted)...)
}

// keptTurns returns the granted turns not given back, in time order: the
// sends the store let through.
func (r *recording) keptTurns() []core.Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ts []core.Turn
	for _, t := range *r.granted {
		if !(*r.refunded)[t.Token] {
			ts = append(ts, t)
		}
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].At < ts[j].At })
	return ts
}

// kept returns the instants (on the store's clock) of keptTurns.
func (r *recording) kept() []time.Time { return turnTimes(r.keptTurns()) }

func turnTimes(turns []core.Turn) []time.Time {
	ts := make([]time.Time, len(turns))
	for i, t := range turns {
		ts[i] = time.Unix(0, t.At)
	}
	return ts
}

// checkNoIdleQueue fails t if the store let the budget idle while a call
// waited: a turn that had to wait (Wait > 0) comes at most one interval
// after the turn before it (turns in time order), when both were paced at
// the full rate (Factor 1) — but for unused turns: a turn granted and
// then not used (its call's context ended, or a pause came after it)
// that the store could not take back leaves one interval unspent, so up
// to unused intervals past those bounds are allowed in all. This is the
// exact form of "the budget is spent at its full rate": it holds however
// late the callers run.
func checkNoIdleQueue(t *testing.T, turns []core.Turn, interval time.Duration, unused int) (queued int) {
	t.Helper()
	idle := time.Duration(0) // past the one interval a waiting turn may come after the one before
	for i := 1; i < len(turns); i++ {
		cur, prev := turns[i], turns[i-1]
		if cur.Wait <= 0 || cur.Factor != 1 || prev.Factor != 1 {
			continue
		}
		queued++
		if gap := time.Duration(cur.At - prev.At); gap > interval {
			if idle += gap - interval; idle > time.Duration(unused)*interval {
				t.Errorf("turn %d waited %v yet came %v after the turn before, want at most %v (%v idle in all, %d turns unused): the store left the budget idle",
					i, cur.Wait, gap, interval, idle, unused)
				return queued
			}
		}
	}
	return queued
}

// waitGranted blocks until r has granted n turns in all, or fails t after
// a minute (a generous limit: it only guards against a hang).
func (r *recording) waitGranted(t *testing.T, n int) []core.Turn {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		if ts := r.turns(); len(ts) >= n {
			return ts
		}
		select {
		case <-r.changed:
		case <-timeout:
			t.Fatalf("the store granted %d turns in a minute, want %d", len(r.turns()), n)
		}
	}
}

// cancelWhileWaiting makes a call on b that takes the next turn from r,
// cancels it while it waits for that turn, and returns the turn and the
// call's error.
func (r *recording) cancelWhileWaiting(t *testing.T, b *core.Budget) (core.Turn, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error)
	n := len(r.turns())
	go func() { _, err := b.Acquire(ctx); errc <- err }()
	turn := r.waitGranted(t, n+1)[n]
	cancel()
	return turn, <-errc
}
