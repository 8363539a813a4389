package core

import (
	"context"
	"math"
	"time"

	"github.com/headgate-go/headgate/core/internal/gcra"
)

// A refused call keeps its place in line. When a refusal makes the budget
// wait (a server pause, or the estimate's wait), the call it refused will
// be retried when the wait ends — the adapters sleep exactly the budget's
// PauseRemaining — but by then every caller that arrived during the wait is
// queued ahead of it. So the refusal leaves a reserved place at the head of the
// queue: a waiter with no caller that reserves the first turn after the
// wait. The first call that arrives once that turn has come takes it and
// goes at once; the callers queued behind it wait for it, for placeGrace at
// most, and then the place is given up. With WithMaxInFlight the place
// also keeps the next slot freed, so the retry waits for no slot either.
// A call that arrives at once after the refusal adopts the place: a retry
// layer that does not wait.
//
// A place is reserved for the refused request's key (internal/reqkey: its method
// and URL), and only a call for that key takes it: a caller that arrives
// at the wait's end with another request — one whose call was admitted
// the instant the wait ended and who came straight back — queues behind
// the places instead of taking one, which would leave the refused call's
// retry at the back of the queue (behind a whole window, on a windowed
// server). Calls with no key (Acquire) take any place, as do all calls the
// places of a Permit that knew no key (anyKey); calls for one URL share
// their places.

// maxPlaceGrace bounds how long after its turn a reserved place waits for the
// refused call's retry: long enough for a retry layer to wake and send,
// short enough that a call that never comes back costs the others little.
// The grace is one interval of the pace, at most this.
const maxPlaceGrace = int64(20 * time.Millisecond)

// anyKey is the key of a place any call may take (a request's key,
// reqkey.Of, is never it, nor 0: no key).
const anyKey uint64 = 1

// reservedPlace reports whether w is a reserved place, or was one until a call adopted
// it (only places have a key). The run of them at the head of the queue is
// where places are reserved, in the order of their refusals: a loop over the
// places walks that whole run, not only its first places, or a retry
// would miss its place behind one adopted before it.
func (w *waiter) reservedPlace() bool { return w.place || w.key != 0 }

// takes reports whether a call for key may take the reserved place p.
func (p *waiter) takes(key uint64) bool { return key == 0 || p.key == anyKey || p.key == key }

// placeGraceLocked is how long a reserved place waits past its turn: one
// interval of the effective pace, at most maxPlaceGrace.
func (b *Budget) placeGraceLocked() int64 { return min(b.g.Interval, maxPlaceGrace) }

// givePlaceUpLocked removes the reserved place p, whose retry did not come in
// time, and gives its turn to the callers behind it.
func (b *Budget) givePlaceUpLocked(p *waiter, now int64) {
	if n := p.Next; n != nil {
		n.turn.TATBefore = p.turn.TATBefore // re-timed from before the place
	} else {
		if b.g.Cancel(p.turn.TATBefore, p.turn.TATAfter) { // the last: its turn back
			b.rewindLocked(b.g.TAT)
		}
	}
	b.queue.Remove(p)
	if p.slot.idx1 > 0 {
		b.freeSlotLocked(p.slot)
	}
	if p.key != anyKey {
		b.pause.late.add(p.key) // its retry, late, still goes first (place_late.go)
	}
	b.handFreeSlotsLocked() // its reservation, if it held no slot
	b.retimeQueueLocked(now)
}

// keepPlaceLocked leaves a reserved place for a refused call at the head of the
// queue, behind the places already reserved, unless the budget is not waiting
// (nothing to keep a place in) or as many places are reserved as a burst holds.
// Places past what may go at once when the wait ends (one, when it ends
// with a guess) keep their calls' turns behind the first: their retries
// adopt them by key whenever they come back.
func (b *Budget) keepPlaceLocked(now int64, key uint64) {
	until, allow := b.waitUntilLocked(now), b.g.Burst
	if until <= now || b.dims != nil {
		return
	}
	var last *waiter
	n := int64(0)
	for w := b.queue.Head; w != nil && w.reservedPlace(); w = w.Next {
		last, n = w, n+1
	}
	if n >= max(allow, b.g.Burst) {
		return // as many places as a burst, the most a pause refuses at once
	}
	b.insertPlaceLocked(now, key, last)
}

// insertPlaceLocked keeps a place for key behind last, the end of the
// run of reserved places at the head (nil: none), and returns it.
func (b *Budget) insertPlaceLocked(now int64, key uint64, last *waiter) *waiter {
	p := &waiter{place: true, key: key, deadline: never, arrived: now, turn: gcra.Turn{SendAt: never}}
	if last == nil {
		if h := b.queue.Head; h != nil {
			p.turn.TATBefore = h.turn.TATBefore
		} else {
			p.turn.TATBefore = b.g.TAT
		}
		b.queue.PushFront(p)
		return p
	}
	b.queue.InsertAfter(last, p) // (re-timed with the queue)
	return p
}

// claimPlaceLocked gives a call for key arriving at now the first reserved
// place it may take whose turn has come, and reports whether it did. The
// call holds a slot of its own already: a slot the place kept is freed.
func (b *Budget) claimPlaceLocked(now int64, key uint64) bool {
	p := b.queue.Head
	for p != nil && p.reservedPlace() && p.turn.SendAt <= now && !(p.place && p.takes(key)) {
		p = p.Next
	}
	if p == nil || !p.place || p.turn.SendAt > now {
		return false
	}
	b.takePlaceLocked(p, now)
	if p.slot.idx1 > 0 {
		b.freeSlotLocked(p.slot)
	}
	b.handFreeSlotsLocked() // the call holds its own slot: the reservation ends
	return true
}

// claimPlaceSlotLocked is claimPlaceLocked for a budget WithMaxInFlight,
// before the call took a slot: a place that kept a slot gives the call
// both, so the retry waits for neither.
func (b *Budget) claimPlaceSlotLocked(now int64, key uint64) (slotRef, bool) {
	for p := b.queue.Head; p != nil && p.reservedPlace() && p.turn.SendAt <= now; p = p.Next {
		if !p.place || !p.takes(key) {
			continue
		}
		if p.slot.idx1 == 0 && b.slotFreeLocked() {
			p.slot = b.takeSlotLocked() // the one reserved for it
		}
		if p.slot.idx1 > 0 {
			b.takePlaceLocked(p, now)
			return p.slot, true
		}
	}
	return slotRef{}, false
}

// takePlaceLocked removes the reserved place p for the call that takes it at
// now, and lets the callers behind it go. The call goes now, not at the
// turn the place reserved, and the callers behind it keep the pace from
// its real send: the queue is re-timed from it (p's reservation made again
// at now — before the places still ahead of it, when it is not the head),
// or the pace's next turn after the burst would come as much too early as
// the retry came late.
func (b *Budget) takePlaceLocked(p *waiter, now int64) {
	head := b.queue.Head
	b.queue.Remove(p)
	if p.turn.SendAt < now {
		before := p.turn.TATBefore
		if head != p {
			before = head.turn.TATBefore
		}
		tat := gcra.Spend(before, now, 1, b.g.Interval)
		if h := b.queue.Head; h != nil {
			h.turn.TATBefore = tat
			b.retimeQueueLocked(now)
		} else {
			b.g.Rewind(max(b.g.TAT, tat))
		}
	}
	b.grantLocked(now)
	b.dispatchLocked(now)
}

// adoptWithin is how soon after the refusal a call may adopt its reserved
// place: a retry layer that retries at once comes back within
// microseconds; a caller who merely arrives first later must not take it.
const adoptWithin = int64(time.Millisecond)

// adoptable reports whether a call for key arriving at now may adopt the
// reserved place p before its turn: the refused request itself (its key) at
// any time — a place behind a guess's is still its own when its retry
// comes back at the pause's end — and any call it may take at once after
// the refusal.
func (p *waiter) adoptable(now int64, key uint64) bool {
	return key == p.key && key != anyKey || now-p.arrived < adoptWithin
}

// adoptPlaceLocked gives a call arriving at now, at once after the refusal
// (adoptWithin), the reserved place at the head of the queue (its call was
// sent before anyone queued behind it): w, the call's waiter (one is taken
// when w is nil), takes the place's stead in the queue, with its
// reservation and its key, and is returned (nil if no place can be
// adopted, or its turn comes at or after deadline). A retry layer that
// retries at once (go-kit's lb.Retry) comes back before the wait ends: it
// waits in its place. withSlot: the call holds no slot yet and takes the
// one the place kept (WithMaxInFlight), or a free one, in w.slot; without,
// the call holds a slot of its own, and one its place kept is freed — a
// retry that came back while every slot was taken waited for one, and its
// place may have taken the next slot freed before it ran, but the place is
// still its.
func (b *Budget) adoptPlaceLocked(w *waiter, now, deadline int64, withSlot bool, key uint64) *waiter {
	for p := b.queue.Head; p != nil && p.reservedPlace(); p = p.Next {
		if !p.place || !p.takes(key) {
			continue
		}
		if withSlot && p.slot.idx1 == 0 && b.slotFreeLocked() && p.adoptable(now, key) && p.turn.SendAt < deadline {
			p.slot = b.takeSlotLocked() // the one reserved for it
		}
		if withSlot && p.slot.idx1 == 0 || !p.adoptable(now, key) || p.turn.SendAt >= deadline {
			continue
		}
		if w == nil {
			w = b.newWaiter()
		}
		w.turn, w.key, w.deadline, w.arrived = p.turn, p.key, deadline, now
		if b.pause.until > now {
			w.pauseEnd = b.pause.until
		}
		b.queue.InsertAfter(p, w)
		b.queue.Remove(p)
		if withSlot {
			w.slot = p.slot
		} else if p.slot.idx1 > 0 {
			// The call holds a slot of its own (it waited for one, and a
			// slot freed meanwhile went to its place): the place's is freed.
			b.freeSlotLocked(p.slot)
		}
		return w
	}
	return nil
}

// placeWithSlot gives a call of a budget WithMaxInFlight, before it takes a
// slot, a reserved place that kept one: claimed when its turn has come, or
// adopted when the call is back at once (it then waits in it). ok is false
// when no place is for it.
func (b *Budget) placeWithSlot(ctx context.Context, now, deadline int64, key uint64) (p Permit, ok bool, err error) {
	if b.lastAt.Load() == math.MinInt64 {
		// The queue was empty at the last unlock, so no place is reserved: a
		// place is queued, and every unlock publishes the queue's last
		// turn (wake.go). A refused call's retry comes after the unlock
		// that reserved its place, so it never misses it; a call that races
		// the refusal counts as arrived before it. No lock taken for nothing.
		return Permit{}, false, nil
	}
	b.lock()
	if ref, ok := b.claimPlaceSlotLocked(now, key); ok {
		b.unlock()
		return Permit{b: b, sent: now, slot: ref, key: key}, true, nil
	}
	w := b.adoptPlaceLocked(nil, now, deadline, true, key)
	if w == nil {
		b.unlock()
		return Permit{}, false, nil
	}
	ref := w.slot
	w.slot = slotRef{}
	w.throttled = b.model.Factor() < 1
	b.unlock()
	sent, err := b.wait(ctx, w)
	if err != nil {
		b.releaseSlot(ref)
		return Permit{}, true, err
	}
	return Permit{b: b, sent: sent, slot: ref, key: key}, true, nil
}

// placeSlotLocked hands a refused call's retry about to wait for a slot
// the slot its reserved place took, if it took one (key 0, or anyKey: no place
// is its own). The retry found its place without a slot and none free
// (placeWithSlot), and one freed before it queued for a slot went to that
// place, its retry not waiting yet (freeSlotLocked): waiting on, it would
// wait behind the others for a slot while its place held one, and at the
// wait's end the place — its turn come, its retry not there — holds
// everyone behind it until it is given up, their requests never going to
// free a slot. With the slot, the retry adopts its place (adoptPlaceLocked).
func (b *Budget) placeSlotLocked(key uint64) (slotRef, bool) {
	if key == 0 || key == anyKey {
		return slotRef{}, false
	}
	for p := b.queue.Head; p != nil && p.reservedPlace(); p = p.Next {
		if p.place && p.key == key && p.slot.idx1 > 0 {
			ref := p.slot
			p.slot = slotRef{}
			return ref, true
		}
	}
	return slotRef{}, false
}

// placeExpiryLocked is when the first reserved place is due to be given up,
// or 0: the caller first in line for a slot waits for it, since the place
// holds, or reserves, the slot it waits for.
func (b *Budget) placeExpiryLocked() int64 {
	if b.cfg.maxInFlight == 0 {
		return 0
	}
	for p := b.queue.Head; p != nil && p.reservedPlace(); p = p.Next {
		if p.place {
			return p.expire + 1
		}
	}
	return 0
}

// placesWithoutSlotLocked is how many reserved places hold no slot: that many
// free slots are reserved for their retries (WithMaxInFlight).
func (b *Budget) placesWithoutSlotLocked() int {
	n := 0
	for p := b.queue.Head; p != nil && p.reservedPlace(); p = p.Next {
		if p.place && p.slot.idx1 == 0 {
			n++
		}
	}
	return n
}
