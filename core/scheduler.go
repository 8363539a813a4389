package core

import (
	"math"
	"time"

	"github.com/headgate-go/headgate/core/internal/gcra"
)

// The scheduler: how a call of an in-memory budget gets its turn.
//
// A call reserves its turn at once, when it arrives (reserveLocked: the one
// reservation of the GCRA state), and then sleeps until that instant; it
// is never re-queued but for a server pause that became known between its
// grant and its going (pause_held.go). Everything below keeps these
// invariants, all under the budget's mu:
//
//  1. The queued reservations are the contiguous tail of the GCRA
//     timeline. Every waiter in b.queue reserved after every call already
//     granted, in queue order, so head.turn.TATBefore (and head.res's
//     tatBefore per dimension) is the state before all of them. A new call
//     reserves after the queue's tail (lastSendAtLocked); if its turn has
//     come, so has every queued turn before it, and dispatchLocked empties
//     the queue first. A backfilled call (WithBackfill) is reserved before
//     the head and the queue re-reserved after it. Settling a granted
//     reservation's cost shifts the queued ones' tatBefore/tatAfter with
//     the state.
//  2. Send times are non-decreasing along the queue (arrival order).
//  3. A waiter is queued, granted or failed. Only the budget moves it,
//     under mu: queued → granted by dispatchLocked (called by whoever holds
//     mu and sees its turn come: the queue's timer, a new call, a
//     re-timing, a cancelled waiter whose turn had come); queued → failed
//     by retimeLocked when its new turn falls at or after its deadline.
//     Whoever moves it out of queued removes it from the queue and puts it
//     on b.wake.ready, whose waiters unlock signals once mu is released (a long
//     batch of grants never holds mu while it wakes them); its fields are
//     final from then on, until its own goroutine, having read them,
//     recycles it (queue.go). Only its own goroutine takes it out while still
//     queued: when its context ends (it then gives its reservation back
//     where nobody reserved after it). Only its own goroutine, having
//     received its signal, moves it from granted back to queued: granted
//     before a server pause that became known before it went, it waits
//     for the pause's end after all (holdBack, pause_held.go). A capped
//     call's waiter may first wait for a slot (slotQueued, slots.go): the
//     holder of mu that hands it a slot reserves its turn before releasing
//     mu (handedTurnsLocked), so it leaves slotQueued for one of the three
//     in the order callers queued for slots, and no later call reserves
//     before it.
//  4. Nobody sleeps until a given waiter's turn but the queue's timer
//     (wake.go), which every unlock sets for the queue as it is.
//
// The fast lane (fast.go) admits calls without mu, by compare-and-swap on
// its own copy of tat, only while it is open; it is open only while the
// queue is empty (and nothing is paused, held or probing), and every
// holder of mu closes it first (lock). So under mu the invariants above
// never see it: to the scheduler, a call through the lane is one granted
// before the lock was taken.
//
// takeTurn reserves the call's turn — with r's cost in the extra
// dimensions, for a budget that has them. It returns the time the turn was
// given, or the queued waiter w that the caller waits on (wait). It, and
// for a capped call the slot's handover (slots.go), take a call's turn from
// the in-memory state through turnLocked. (The caller waits, not takeTurn:
// a waiting goroutine's stack stays shallow.)
//
// Its frame stays small too — the helpers off its common path are not
// inlined (newWaiter, spare, dimSet.newReservation) — because a queued
// caller's unlock may set the queue's timer below it (wake.go): on a fresh
// goroutine's first stack, a deeper chain grows that stack inside the
// runtime's timer heap.
func (b *Budget) takeTurn(now, deadline int64, r *reservation, key uint64) (sent int64, w *waiter, err error) {
	if r == nil && b.dims != nil {
		r = b.dims.newReservation(nil) // a request with no extra cost
	}
	if now < b.lastAt.Load() { // (a hint: its turn comes after the last queued, not yet come: it waits)
		w = b.newWaiter() // taken before mu is, not under it
	}
	b.lock()
	q, err := b.turnLocked(w, now, deadline, r, key)
	b.unlock() // (arms the queue's timer: wake.go)
	if q == nil {
		b.spare(w)
		if err == nil {
			return now, nil, nil
		}
	}
	return 0, q, err
}

// turnLocked is takeTurn under mu: it reserves the call's turn and
// returns nil when the turn was given at once (at now), or the error when
// it comes at or after deadline, or else the waiter the call waits on,
// queued or granted: w, or one taken for it when w is nil. The returned
// waiter holds the call's reservation, or the reserved place it adopted.
func (b *Budget) turnLocked(w *waiter, now, deadline int64, r *reservation, key uint64) (*waiter, error) {
	b.syncPaceLocked(now)
	if b.queue.Head != nil { // (the queue's head is where places are reserved and backfills go)
		granted, p := b.aheadLocked(w, now, deadline, r, key)
		if late := b.pause.late.n > 0 && key != 0 && b.pause.late.take(key); late && !granted && p == nil && r == nil {
			if w == nil {
				w = b.newWaiter()
			}
			b.lateRetryLocked(w, now, deadline, key) // a refused call back after its place was given up: place_late.go
			return w, nil
		}
		if granted {
			return nil, nil
		}
		if p != nil {
			return p, nil
		}
	}
	if b.pause.late.n > 0 && b.queue.Head == nil {
		b.pause.late.clear() // nobody left to go ahead of
	}
	if b.queue.N > 0 {
		// Those ahead whose turn has come go first, before the call
		// reserves: a guess among them holds the rest, and re-times the
		// queue, which must not forget a reservation not yet in it.
		b.dispatchLocked(now)
	}
	if b.queue.N == 0 {
		b.pause.waiting(now)
	}
	t, throttled, ok := b.reserveLocked(now, deadline, b.lastSendAtLocked(), r, int64(b.queue.N)+1, b.baseLocked())
	if !ok {
		b.idleLocked()
		return nil, b.lateErrorLocked(t.SendAt, now)
	}
	if t.SendAt <= now && b.queue.N == 0 { // (a place reserved ahead: it waits behind it, in the queue's reservations)
		if r != nil {
			b.grantDimsLocked(r)
		}
		b.grantLocked(now)
		b.idleLocked()
		b.openLaneLocked(now) // nobody waits, perhaps: the next calls need no lock
		return nil, nil
	}
	if w == nil {
		w = b.newWaiter()
	}
	w.turn, w.deadline, w.arrived, w.res, w.callKey = t, deadline, now, r, key
	if b.pause.until > now { // the pause holds it back, whatever follows
		w.pauseEnd = b.pause.until
	}
	w.throttled = throttled
	b.queue.Push(w)
	return w, nil
}

// aheadLocked gives the call a turn ahead of the queue, if one is there
// for it: a backfill before the head (WithBackfill), a refused call's
// place at its end (claimed: granted) or at once (adopted: p, w or one
// taken for it, in the place's stead, first in line; place.go). Otherwise
// it changes nothing.
func (b *Budget) aheadLocked(w *waiter, now, deadline int64, r *reservation, key uint64) (granted bool, p *waiter) {
	if r != nil {
		if b.dims.backfill && b.backfillLocked(now, r) {
			b.grantLocked(now)
			b.grantDimsLocked(r)
			return true, nil
		}
		return false, nil
	}
	if b.claimPlaceLocked(now, key) { // a refused call back when its wait ended
		return true, nil
	}
	p = b.adoptPlaceLocked(w, now, deadline, false, key) // back at once
	return false, p
}

// spare puts back the waiter takeTurn took ahead of mu and did not need
// (nil: none); nobody else ever saw it. (Not inlined: takeTurn's frame.)
//
//go:noinline
func (b *Budget) spare(w *waiter) {
	if w != nil {
		b.waiters.Put(w)
	}
}

// lastSendAtLocked is the send time of the caller queued last, or the
// distant past: a new turn never comes before it (arrival order).
func (b *Budget) lastSendAtLocked() int64 {
	if b.queue.Tail == nil {
		return math.MinInt64
	}
	return b.queue.Tail.turn.SendAt
}

// planLocked returns the earliest instant at or after now and after at
// which the pos-th call from now (counting the calls queued ahead of it)
// may go: its turn at the configured pace, and what the estimate of the
// server's quota allows (internal/quota), with the server's pause in it;
// and for r's cost (r may be nil) every extra dimension holds what the
// call needs. known is the part of that wait that is certain: the pause
// the server stated, what no reading of its reports lets go sooner, the
// configured pace from base, the pacing state before the calls queued
// ahead (their turns may have waited on the estimate), and the extra
// dimensions. It changes nothing: Check asks it alone.
func (b *Budget) planLocked(now, after int64, r *reservation, pos, base int64) (s, known int64) {
	at, stated := b.model.Next(now, pos, b.quietLocked(now))
	s = max(now, after, b.g.Earliest(1), at)
	known = max(now, stated, min(s, gcra.EarliestOf(base+(pos-1)*b.g.Interval, 1, b.g.Burst, b.g.Interval)))
	if r != nil {
		// While the estimate holds the queue (part of s is uncertain), the
		// calls before this one spent their cost at the estimate's times:
		// no dimension's turn after them is certain.
		held := known < s
		for i, n := range r.n {
			if n > 0 {
				d := b.dims.d[i].g.Earliest(n)
				if s = max(s, d); !held {
					known = max(known, d)
				}
			}
		}
	}
	return s, known
}

// baseLocked is the pacing state before the queued reservations: what
// the configured pace allows the calls queued, in order, whatever the
// estimate made them wait.
func (b *Budget) baseLocked() int64 {
	if h := b.queue.Head; h != nil {
		return h.turn.TATBefore
	}
	return b.g.TAT
}

// rewindLocked rewinds the pacing state to tat, but never below b.sent,
// the record of the turns granted: a state that may have been taken
// before a turn granted since (a reserved place, a call requeued after the
// pause, one granted ahead of the queue) must not give that turn again.
// Every turn b.g gives is then one the configured rate and burst allow
// after every turn granted, in any order.
func (b *Budget) rewindLocked(tat int64) { b.g.Rewind(max(tat, b.sent)) }

// reserveLocked is the one reservation of the in-memory state: it plans
// the send time s of the pos-th call from now (planLocked) and, unless
// what of the wait is certain ends at or after deadline, spends one
// request and r's cost in every extra dimension at s, all at once. When it
// does not, nothing changes and ok is false; t.SendAt then says when the
// certain part of the wait ends, when that failed the call, or else when
// s would have been. A wait the estimate set is not certain: a call waits
// it out, or its context ends first — but a call that can wait for
// nothing (TryAcquire's deadline, now+1) fails when s is not now, certain
// or not. throttled: the estimate holds the call past its turn at the
// configured pace.
func (b *Budget) reserveLocked(now, deadline, after int64, r *reservation, pos, base int64) (t gcra.Turn, throttled, ok bool) {
	var known int64
	t.SendAt, known = b.planLocked(now, after, r, pos, base)
	if known >= deadline {
		t.SendAt = known
		return t, false, false
	}
	if t.SendAt >= deadline && deadline-now <= 1 {
		return t, false, false
	}
	t.TATBefore, t.TATAfter = b.g.ReserveN(t.SendAt, 1)
	if r != nil {
		b.spendDimsLocked(t.SendAt, r)
	}
	return t, t.SendAt > known && t.SendAt > b.pause.until, true
}

// grantLocked counts a call granted at now (every grant, on every path
// under mu: the fast lane's are counted when lock closes it). A call that
// went on the estimate's guess changes when the others may go: they are
// re-timed.
func (b *Budget) grantLocked(now int64) {
	b.sent = gcra.Spend(b.sent, now, 1, b.g.Interval)
	b.lastAt.Store(now)
	if b.model.Sent(now, 1) && b.queue.Head != nil {
		b.retimeQueueLocked(now)
	}
}

// idleLocked notes that no caller waits when the queue is empty: the
// silence a response may cause counts from the next caller that waits.
func (b *Budget) idleLocked() {
	if b.queue.N == 0 {
		b.pause.idle()
	}
}

// dispatchLocked grants every queued waiter whose turn has come, in order.
func (b *Budget) dispatchLocked(now int64) {
	for w := b.queue.Head; w != nil && w.turn.SendAt <= now; w = b.queue.Head {
		if w.place {
			if now < w.expire {
				return // reserved for a refused call's retry: the others wait behind it
			}
			b.givePlaceUpLocked(w, now) // nobody came back for it
			continue
		}
		b.queue.Remove(w)
		w.state, w.granted = granted, now
		if w.res != nil {
			b.grantDimsLocked(w.res)
		}
		b.wake.ready.Push(w) // signalled once mu is released (unlock)
		b.grantLocked(now)
	}
	b.idleLocked()
}

// lateErrorLocked builds the error of a call whose turn at sendAt comes at
// or after its deadline. The entry point adds the context's deadline.
func (b *Budget) lateErrorLocked(sendAt, now int64) error {
	e := &RateLimitError{RetryAfter: time.Duration(sendAt - now), Reason: Paced, Budget: b.cfg.name}
	switch {
	case b.pause.until > now && (sendAt <= b.pause.until || b.queue.Head != nil && b.queue.Head.place):
		// (Held back by the pause, or by the places reserved at its end.)
		e.Reason, e.StatusCode = Paused, b.pause.status
	case b.model.Factor() < 1:
		e.Reason = Throttled
	}
	return e
}
