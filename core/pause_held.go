package core

import "context"

// A call granted its turn before a server pause became known may not have
// gone yet when it does. A burst's turns are granted at one instant, but
// its callers wake and reach the wire one after another, and the refusal
// that begins the pause may be applied meanwhile. Such a call does not go
// into the known pause: on waking it finds that the pause moved later
// since its grant (Budget.pause.movedAt, a hint read without mu) and
// waits again, first in line behind the reserved places (it was granted
// before anyone who queued since), for the pause's end.

// holdBack queues w again, granted at w.granted, when the server's pause
// moved later since and has not ended, and reports whether it did. w's
// signal has been received: its goroutine alone holds it (scheduler.go,
// invariant 3). Its first turn was spent; it reserves another, after the
// pause, so the pause's end lets no more go at once than it would have;
// one whose new turn passes its deadline fails, as any waiter does. (Not
// with extra dimensions: their reservation was granted with the turn.)
//
//go:noinline
func (b *Budget) holdBack(w *waiter) bool {
	now := b.now()
	b.lock()
	if !b.heldLocked(w.granted, now) {
		b.unlock()
		return false
	}
	w.state = queued
	b.requeueLocked(w, now)
	b.unlock()
	return true
}

// heldLocked reports whether a call granted its turn at granted, not yet
// sent at now, is held back: the server's pause moved later since, and
// has not ended. (Not with extra dimensions: their reservation was granted
// with the turn.)
func (b *Budget) heldLocked(granted, now int64) bool {
	p := b.pause.movedAt.Load()
	return p != 0 && p >= granted && b.pause.until > now && b.dims == nil
}

// requeueLocked queues w, a call held back by the pause, first in line
// behind the reserved places, and reserves its turn again after the pause.
func (b *Budget) requeueLocked(w *waiter, now int64) {
	var last *waiter // the end of the run of reserved places at the head
	for q := b.queue.Head; q != nil && q.reservedPlace(); q = q.Next {
		last = q
	}
	w.pauseEnd = b.pause.until
	switch h := b.queue.Head; {
	case last != nil:
		b.queue.InsertAfter(last, w) // (re-timed with the queue)
	case h != nil:
		w.turn.TATBefore = h.turn.TATBefore // (the state before the queued reservations)
		b.queue.PushFront(w)
	default:
		w.turn.TATBefore = b.g.TAT
		b.queue.PushFront(w)
	}
	b.retimeQueueLocked(now) // (not retimeLocked: w's old turn has come, and would be granted again)
	b.dispatchLocked(now)
}

// The last look. A Transport's request granted its turn goes on to the
// wire in the same goroutine, but between the grant (or the wake that
// checked holdBack) and the next RoundTripper a refusal can be applied by
// another goroutine — a burst's requests reach the wire one after another
// over hundreds of µs on two loaded CPUs. So just before sending,
// Transport.RoundTrip looks once more (lastLook, an atomic load when no
// pause moved since the grant): a call granted before the pause moved
// later waits for its end, first in line behind the reserved places, as a
// woken waiter does, or fails at once with a *RateLimitError when its turn
// after the pause comes at or after its deadline.

// lastLook holds p, about to be sent, for a server pause that moved later
// since its turn was given and has not ended. It returns the context's or
// the budget's error when the call must not be sent; p.sent becomes the
// turn it was given after the pause.
func (b *Budget) lastLook(ctx context.Context, p *Permit) error {
	if b.pause.movedAt.Load() < p.sent {
		return nil // no pause moved later since the grant (the common case)
	}
	return b.holdAtWire(ctx, p)
}

// holdAtWire is lastLook's wait: the in-memory budget's alone (a store's
// pause is the store's).
//
//go:noinline
func (b *Budget) holdAtWire(ctx context.Context, p *Permit) error {
	if !b.pacer.scheduled() {
		return nil
	}
	deadline := b.deadline(ctx)
	w := b.newWaiter() // (taken before mu, as takeTurn does)
	now := b.now()
	b.lock()
	if !b.heldLocked(p.sent, now) {
		b.unlock()
		b.spare(w)
		return nil
	}
	w.state, w.deadline, w.arrived, w.callKey = queued, deadline, now, p.key
	w.throttled = b.model.Factor() < 1
	b.requeueLocked(w, now)
	b.unlock()
	sent, err := b.wait(ctx, w)
	if err != nil {
		return withDeadline(ctx, err)
	}
	p.sent = sent
	return nil
}
