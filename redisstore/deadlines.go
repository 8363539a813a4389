package redisstore

import (
	"context"
	"sync"
	"time"
)

// deadlines bounds the store's calls to Redis by its timeout, as
// context.WithTimeout would, with one runtime timer for every call in
// flight instead of one per call.
//
// A timer started per call is not free on a serial path: adding it to the
// scheduler's timers wakes another thread of the Go runtime to watch it
// (runtime.wakeNetPoller), on every admission. On a 2-CPU machine that
// thread takes the CPU Redis needs (a serial round trip measured 4–9 %
// slower with it, BenchmarkRedis; a bare PING up to twice as slow).
//
// Every call's deadline is its start plus the one timeout, and calls are
// listed as they start (under the lock that reads the clock), so the list
// is in deadline order and the timer only ever needs to be set for its
// head. While calls go on, it fires about once per timeout, ends the calls
// whose deadline passed and is set again for the first left; with none in
// flight it is not set again.
type deadlines struct {
	d time.Duration

	mu         sync.Mutex
	head, tail *deadlineCtx // the calls in flight, by deadline; guarded by mu
	timer      *time.Timer  // nil until the first call; guarded by mu
	armed      bool         // the timer is set and has not run fire yet; guarded by mu
	arms       int          // how many times the timer was set (tests); guarded by mu
}

// A deadlineCtx is one call's context: its parent's values, a deadline d
// after the call's start, and Done closed at that deadline, when the
// parent ends, or when the call ends (end), whichever comes first.
type deadlineCtx struct {
	context.Context // the parent

	ds         *deadlines
	deadline   time.Time
	done       chan struct{}
	err        error        // set, under ds.mu, before done is closed
	prev, next *deadlineCtx // in ds's list while listed; guarded by ds.mu
	listed     bool         // guarded by ds.mu
	stop       func() bool  // stops the parent's AfterFunc; nil for a parent that never ends
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return c.err // written before the close
	default:
		return nil
	}
}

// start returns the context of a call starting now under parent: parent
// itself when its own deadline comes first (no bound of ours is needed),
// else a *deadlineCtx. The caller passes it to end when the call is done.
func (ds *deadlines) start(parent context.Context) context.Context {
	if dl, ok := parent.Deadline(); ok && dl.Before(time.Now().Add(ds.d)) {
		return parent
	}
	c := &deadlineCtx{Context: parent, ds: ds, done: make(chan struct{})}
	ds.mu.Lock()
	c.deadline = time.Now().Add(ds.d)
	c.prev, c.listed = ds.tail, true
	if ds.tail != nil {
		ds.tail.next = c
	} else {
		ds.head = c
	}
	ds.tail = c
	if !ds.armed {
		ds.armed = true
		ds.arms++
		if ds.timer == nil {
			ds.timer = time.AfterFunc(ds.d, ds.fire)
		} else {
			ds.timer.Reset(ds.d)
		}
	}
	ds.mu.Unlock()
	if parent.Done() != nil {
		c.stop = context.AfterFunc(parent, func() { ds.finish(c, parent.Err()) })
	}
	return c
}

// end ends a call started with start: its context is cancelled (Done
// closes, for whatever still watches it) and leaves the list.
func (ds *deadlines) end(ctx context.Context) {
	c, ok := ctx.(*deadlineCtx)
	if !ok || c.ds != ds {
		return // the parent, returned as it was
	}
	ds.finish(c, context.Canceled)
	if c.stop != nil {
		c.stop()
	}
}

// finish closes c's Done with err, once, and takes c off the list.
func (ds *deadlines) finish(c *deadlineCtx, err error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	ds.finishLocked(c, err)
}

func (ds *deadlines) finishLocked(c *deadlineCtx, err error) {
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
	if !c.listed {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		ds.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		ds.tail = c.prev
	}
	c.prev, c.next, c.listed = nil, nil, false
}

// fire is the timer's: it ends every call whose deadline has passed and
// sets the timer for the first call left, if any.
func (ds *deadlines) fire() {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := time.Now()
	for ds.head != nil && !now.Before(ds.head.deadline) {
		ds.finishLocked(ds.head, context.DeadlineExceeded)
	}
	ds.armed = ds.head != nil
	if ds.armed {
		ds.arms++
		ds.timer.Reset(ds.head.deadline.Sub(now))
	}
}
