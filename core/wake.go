package core

import "time"

// The queue's timer: one per budget, not one per waiter.
//
// A queued caller sleeps on its wake channel alone. The budget keeps one
// timer (time.AfterFunc, made at the first wait) set to the instant the
// queue next needs attention (wakeAtLocked): the head's turn, a reserved
// place's end, a quota report running out. When it fires, onTimer re-times
// the queue if the pace changed and grants every turn that has come
// (dispatchLocked), signalling each caller once. Every holder of mu lets
// it go with unlock, which makes sure the timer fires by the time the
// queue, as it left it, needs attention: no change to the queue can leave
// it asleep.

// armLocked says whether the queue's timer must be set, and to fire after
// how long, to fire by wakeAtLocked; it notes the timer set (unlock sets
// it). A timer already set to fire sooner is left alone (it fires, finds
// nothing due and is set again), and so is one whose queue emptied: a
// caller arriving or leaving rarely touches the timer itself, which keeps a
// long queue's drain from paying a timer operation per caller.
func (b *Budget) armLocked() (time.Duration, bool) {
	h := b.queue.Head
	if h == nil {
		return 0, false // (an armed timer fires once for nothing)
	}
	if u := b.dimsShapeEndLocked(); b.wake.armed && b.wake.armedAt <= h.turn.SendAt && (!h.place || b.wake.armedAt <= h.expire) && (u == 0 || b.wake.armedAt <= u) {
		return 0, false // set to fire no later than anything the queue waits for (no clock read)
	}
	now := b.now()
	at := b.wakeAtLocked(now)
	if at == never || b.wake.armed && b.wake.armedAt <= at {
		return 0, false
	}
	b.wake.armed, b.wake.armedAt = true, at
	return time.Duration(max(0, at-now)), true
}

// wakeAtLocked is when the queue next needs attention after now: the
// head's turn, or a reserved place's end when the head is one (its retry takes
// it on arrival; the callers behind it wait until it is given up), or
// sooner the end of a quota report that slowed an extra dimension's pace,
// when the queue is re-timed to the faster one. never: nothing to wait for.
func (b *Budget) wakeAtLocked(now int64) int64 {
	h := b.queue.Head
	at := h.turn.SendAt
	if h.place {
		at = h.expire
		if h.turn.SendAt == never {
			at = never // not yet timed: re-timed before the lock is released
		}
	}
	if u := b.dimsShapeEndLocked(); u > now && u < at {
		at = u
	}
	return at
}

// onTimer is the queue's timer firing: the pace brought to now (which
// re-times the queue if it changed), then every turn that has come
// granted, in order.
func (b *Budget) onTimer() {
	b.lock()
	b.wake.armed = false
	now := b.now()
	b.syncPaceLocked(now)
	b.dispatchLocked(now)
	b.unlock()
}

// wakeup is the queue's timer and the callers to signal when mu is
// released; guarded by the budget's mu.
type wakeup struct {
	ready   waitQueue   // callers granted or failed, to signal once mu is released
	timer   *time.Timer // grants the queue's turns as they come
	armed   bool        // timer is set to fire at armedAt
	armedAt int64
}

// takeReady empties ready and returns its waiters, linked by next, for
// unlock to signal once mu is released.
func (w *wakeup) takeReady() *waiter {
	h := w.ready.Head
	w.ready = waitQueue{}
	return h
}
