package core

import (
	"context"
	"time"
)

// The waiting caller: it sleeps on its own channel until the queue's timer
// (or whoever holds mu and sees its turn come) grants or fails it, or
// leaves the queue when its context ends.

// wait blocks until w is granted, fails, or its context ends. It sleeps on
// w.wake alone: the queue's timer (wake.go) grants the turns as they come,
// and whoever moves w out of queued signals it once, after setting its
// state, so w's fields are read here without mu once the signal came.
// Every way out recycles w (queue.go): the caller never touches it again.
func (b *Budget) wait(ctx context.Context, w *waiter) (int64, error) {
	done := ctx.Done()
	for {
		if done == nil {
			<-w.wake // (a context that never ends: no select to pay for)
		} else {
			select {
			case <-w.wake:
			case <-done:
				return b.leave(ctx, w)
			}
		}
		if b.doneWaiting(w) {
			return b.granted(w)
		}
	}
}

// doneWaiting reports whether w, its signal received, is done waiting:
// failed, or granted and not held back. Granted before a pause that became
// known since, it is queued again for the pause's end (holdBack,
// pause_held.go).
func (b *Budget) doneWaiting(w *waiter) bool {
	return w.state != granted || b.pause.movedAt.Load() < w.granted || !b.holdBack(w)
}

// leave is wait's way out when the context ends first: a queued w gives its
// reservation back (and the slot it holds, a capped call's) and leaves the
// queue; one waiting for a slot leaves the slot queue, having taken
// nothing; one moved out of either meanwhile takes its signal, as if the
// context had not ended. (Its own function, not inlined: wait's frame,
// under which 100k parked callers sleep, stays small enough for a
// goroutine's first stack.)
//
//go:noinline
func (b *Budget) leave(ctx context.Context, w *waiter) (int64, error) {
	b.lock()
	if w.state == slotQueued { // a capped call waiting for a slot: it took nothing (slots.go)
		b.slots.waiting.Remove(w)
		b.unlock()
		b.recycle(w)
		return 0, ctx.Err()
	}
	if w.state == queued {
		now := b.now()
		// w is checked again: syncPaceLocked may re-time the queue,
		// which can grant or fail w, and a turn that has come is
		// taken rather than given back.
		b.syncPaceLocked(now)
		if w.state == queued && w.turn.SendAt <= now {
			b.dispatchLocked(now)
		}
		if w.state == queued {
			if n := w.Next; n != nil {
				// The state before w becomes the state before the one
				// behind it: nothing moves now, and a re-timing, or the
				// last waiter leaving, gives w's turn back too.
				n.turn.TATBefore = w.turn.TATBefore
			}
			b.queue.Remove(w)
			b.g.Cancel(w.turn.TATBefore, w.turn.TATAfter)
			if w.res != nil {
				b.cancelDimsLocked(w.res)
			}
			if w.slot.idx1 > 0 {
				b.freeSlotLocked(w.slot) // the slot a capped call was handed for this turn
			}
			b.unlock()
			b.recycle(w) // out while queued: nobody signals it
			return 0, ctx.Err()
		}
	}
	b.unlock()
	<-w.wake // moved out of queued meanwhile: its signal is there
	return b.granted(w)
}

// granted is what wait returns for w, signalled granted or failed, and
// its signal received: w is recycled before the observer hears of the wait.
// A capped call's w granted with its slot is left to its caller, which
// reports the waits while it holds the slot (acquireSlotTurn); a failed
// one's slot is freed.
func (b *Budget) granted(w *waiter) (int64, error) {
	if w.state == granted && w.slot.idx1 > 0 {
		return w.granted, nil
	}
	state, err, at, slot := w.state, w.err, w.granted, w.slot
	arrived, pauseEnd, throttled := w.arrived, w.pauseEnd, w.throttled
	b.recycle(w)
	if state == failed {
		if slot.idx1 > 0 {
			b.releaseSlot(slot)
		}
		return 0, err
	}
	b.reportWait(arrived, pauseEnd, at, throttled)
	return at, nil
}

// reportWait emits the events of one wait: the part spent in a server
// pause, then the part spent waiting for the turn.
func (b *Budget) reportWait(arrived, pauseEnd, at int64, throttled bool) {
	if b.cfg.observer == nil {
		return
	}
	from := arrived
	if pauseEnd > arrived {
		end := min(pauseEnd, at)
		b.emit(Event{Reason: Paused, Wait: time.Duration(end - arrived)})
		from = end
	}
	if at > from {
		r := Paced
		if throttled {
			r = Throttled
		}
		b.emit(Event{Reason: r, Wait: time.Duration(at - from)})
	}
}
