package core

import "time"

// The queue's timer: one per budget, not one per waiter.
//
// A queued caller sleeps on its wake channel alone. The budget keeps one
// timer (time.AfterFunc, made at the first wait) set to the instant the
// queue next needs attention (wakeAtLocked): the head's turn, a kept
// place's end, a quota report running out. When it fires, onTimer re-times
// the queue if the pace changed and grants every turn that has come
// (dispatchLocked), signalling each caller once. Every holder of mu lets
// it go with unlock, which sets the timer to the queue as it left it, so
// no change to the queue can leave it asleep; an empty queue stops it.

// unlock sets the queue's timer for the queue as it is and releases mu.
// Every holder of the budget's mu releases it this way (lock, fast.go,
// takes it).
func (b *Budget) unlock() {
	if b.queue.head != nil || b.armed {
		b.armLocked()
	}
	b.mu.Unlock()
}

// armLocked sets the queue's timer to wakeAtLocked, or stops it when
// nothing is queued.
func (b *Budget) armLocked() {
	at, now := int64(never), int64(0)
	if b.queue.head != nil {
		now = b.now()
		at = b.wakeAtLocked(now)
	}
	if at == never {
		if b.armed {
			b.timer.Stop()
			b.armed = false
		}
		return
	}
	if b.armed && at == b.armedAt {
		return
	}
	b.armed, b.armedAt = true, at
	d := time.Duration(max(0, at-now))
	if b.timer == nil {
		b.timer = time.AfterFunc(d, b.onTimer)
		return
	}
	b.timer.Reset(d)
}

// wakeAtLocked is when the queue next needs attention after now: the
// head's turn, or a kept place's end when the head is one (its retry takes
// it on arrival; the callers behind it wait until it is given up), or
// sooner the end of the quota report that slowed the pace, when the
// queue is re-timed to the faster one. never: nothing to wait for.
func (b *Budget) wakeAtLocked(now int64) int64 {
	h := b.queue.head
	at := h.turn.sendAt
	if h.place {
		at = h.expire
		if h.turn.sendAt == never {
			at = never // not yet timed: re-timed before the lock is released
		}
	}
	if u := b.ctl.reportEnds(); u > now && u < at {
		at = u
	}
	return at
}

// onTimer is the queue's timer firing: the pace brought to now (which
// re-times the queue if it changed), then every turn that has come
// granted, in order.
func (b *Budget) onTimer() {
	b.lock()
	b.armed = false
	now := b.now()
	b.syncPaceLocked(now)
	b.dispatchLocked(now)
	b.unlock()
}
