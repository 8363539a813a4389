package core

import "math"

// Re-timing: the queue re-reserved when the pace or the estimate changes.
//
// retimeLocked re-reserves the whole queue: it requires invariant 1 and
// that each waiter's turn is the one it last reserved; it rewinds the state
// to the head's tatBefore, brings the pace to the effective one at now
// (behind any pause, floored so a pause ends with no more than the server
// holds), and reserves each waiter again in order. It guarantees that
// every waiter whose turn came is granted, every waiter whose new turn
// passes its deadline is failed and its reservation not made again, the
// rest hold their new turns (the queue's timer is set for them when mu is
// released), and invariants 1 and 2 hold again.

// syncPaceLocked brings the pacing state to the configured pace and the
// extra dimensions to theirs at now, re-timing the callers already
// waiting if a pace changed (SetRate, a quota report for a dimension
// running out).
func (b *Budget) syncPaceLocked(now int64) {
	if int64(b.pace.rate.Interval()) != b.g.Interval || b.pace.burst != b.g.Burst || b.dimsPaceChangedLocked(now) {
		b.retimeLocked(now)
	}
}

// retimeLocked recomputes the turn of every waiting caller, in order, at
// the effective pace and behind any pause. A caller whose new turn comes at
// or after its deadline fails at once. Callers whose turn has come are
// dispatched first.
func (b *Budget) retimeLocked(now int64) {
	b.dispatchLocked(now)
	b.retimeQueueLocked(now)
}

// retimeQueueLocked is retimeLocked without first granting the callers
// whose turn has come.
func (b *Budget) retimeQueueLocked(now int64) {
	if head := b.queue.Head; head != nil {
		b.rewindLocked(head.turn.TATBefore) // the state before the queued reservations
		if head.res != nil {
			b.resetDimsLocked(head.res)
		}
	}
	// A new pace applies to the turns after now; what could go before it
	// may still go (gcra.State.SetPace).
	b.g.SetPace(now, int64(b.pace.rate.Interval()), b.pace.burst)
	if b.dims != nil {
		b.setDimsPaceLocked(now, now)
	}
	b.failSlotWaitersLocked(now)
	after := int64(math.MinInt64) // the send time of the caller re-timed last
	pos, base := int64(0), b.g.TAT
	for w := b.queue.Head; w != nil; {
		next := w.Next
		pos++
		t, throttled, ok := b.reserveLocked(now, w.deadline, after, w.res, pos, base)
		switch {
		case !ok:
			if w.res != nil {
				b.dims.untrack(w.res)
			}
			b.queue.Remove(w)
			pos--
			w.state, w.err = failed, b.lateErrorLocked(t.SendAt, now)
			b.wake.ready.Push(w)
		case t != w.turn:
			w.turn = t
			w.throttled = w.throttled || throttled
			if w.place {
				w.expire = t.SendAt + b.placeGraceLocked()
			} else if b.pause.until > now { // the pause holds it back, whatever follows
				w.pauseEnd = b.pause.until
			}
		}
		if ok {
			after = t.SendAt
		}
		w = next
	}
	b.idleLocked()
}
