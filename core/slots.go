package core

import (
	"context"
	"math"
	"time"
)

// slotRef names a held concurrency slot: its index plus one (0 for no
// slot) and its generation when taken. A slot freed once has a new
// generation, so a second Release, even from a copy of the Permit, frees
// nothing.
type slotRef struct {
	idx1 int32
	gen  uint32
}

// slotPool is a budget's concurrency slots (WithMaxInFlight); guarded by
// the budget's mu.
type slotPool struct {
	inFlight int       // open requests holding a slot
	gen      []uint32  // each slot used so far's generation, bumped when it is freed
	free     []int32   // the slots used so far that nobody holds
	waiting  waitQueue // callers waiting for a slot
	handed   waitQueue // callers handed a slot, their turns not yet reserved: unlock reserves them
}

// admitCapped admits a call of a capped in-memory budget (no extra cost)
// in one critical section when it can go at once: nobody queued for a turn
// (so no reserved place either, place.go), nobody waiting for a slot, a free
// slot, and a turn that has come before deadline. It returns the slot taken
// and true, the turn spent at now; otherwise it takes nothing and reports
// false, and the call takes its slot, then its turn, the long way (acquire).
func (b *Budget) admitCapped(now, deadline int64) (slotRef, bool) {
	b.lock()
	if b.queue.Head != nil || b.slots.waiting.Head != nil || b.freeSlotsLocked() == 0 {
		b.unlock()
		return slotRef{}, false
	}
	b.syncPaceLocked(now)
	if s, _ := b.planLocked(now, math.MinInt64, nil, 1, b.g.TAT); s > now {
		b.unlock()
		return slotRef{}, false // its turn has not come
	}
	if _, _, ok := b.reserveLocked(now, deadline, math.MinInt64, nil, 1, b.g.TAT); !ok {
		b.unlock()
		return slotRef{}, false // at its deadline: the long way fails it
	}
	ref := b.takeSlotLocked()
	b.grantLocked(now)
	b.unlock()
	return ref, true
}

// acquireSlotTurn is acquire's slot and turn for an in-memory budget
// WithMaxInFlight (r: the call's extra cost, or nil). A call that finds a
// slot free takes it and its turn in one critical section; otherwise it
// waits for a slot, in arrival order, and whoever hands it one reserves its
// turn before releasing mu (handedTurnsLocked). So the turns go in the order
// the callers came, across both waits: a caller handed a slot never
// reserves after one who came later, however late its goroutine runs. The
// caller sleeps in one waiter through both waits and wakes once, when its
// turn comes or it fails. A caller waiting for a slot fails at once, like
// one waiting for its turn, when a server pause outlasts its deadline. key
// names the request (place.go; 0: none): a refused call's retry waiting for
// a slot is handed the slot its reserved place would take (freeSlotLocked).
func (b *Budget) acquireSlotTurn(ctx context.Context, now, deadline int64, r *reservation, key uint64) (Permit, error) {
	rr := r
	if rr == nil && b.dims != nil {
		rr = b.dims.newReservation(nil) // a request with no extra cost
	}
	w := b.newWaiter()
	b.lock()
	switch ref, ok := b.slotNowLocked(key); {
	case ok:
		w.slot = ref
		if q, err := b.turnLocked(w, now, deadline, rr, key); q == nil {
			if err != nil {
				b.freeSlotLocked(ref)
			}
			b.unlock()
			w.slot = slotRef{}
			b.spare(w)
			if err != nil {
				return Permit{}, withDeadline(ctx, err)
			}
			return Permit{b: b, sent: now, slot: ref, res: r, key: key}, nil
		}
		// Queued for its turn, holding the slot: it waits below.
	case b.pause.until > now && b.pause.until >= deadline:
		err := b.lateErrorLocked(b.pause.until, now)
		b.unlock()
		b.spare(w)
		return Permit{}, withDeadline(ctx, err)
	default:
		w.state, w.deadline, w.arrived, w.res, w.key = slotQueued, deadline, now, rr, key
		b.slots.waiting.Push(w)
	}
	var sent int64
	var err error
	switch {
	case !b.waitSlot(ctx, w):
		sent, err = b.leave(ctx, w)
	case b.doneWaiting(w):
		sent, err = b.granted(w)
	default:
		sent, err = b.wait(ctx, w) // held back by a pause known since its grant
	}
	if err != nil {
		return Permit{}, withDeadline(ctx, err)
	}
	// Granted: w holds the slot, and granted left it to us (wait.go).
	p := Permit{b: b, sent: sent, slot: w.slot, res: r, key: key}
	handed, pauseEnd, throttled := w.arrived, w.pauseEnd, w.throttled // (its turn's wait began when it was handed the slot)
	b.recycle(w)
	// Until the permit is returned, a panic in an observer reporting a
	// wait frees the slot.
	reported := false
	defer func() {
		if !reported {
			b.releaseSlot(p.slot)
		}
	}()
	if handed > now {
		b.emit(Event{Reason: SlotWait, Wait: time.Duration(handed - now)})
	}
	b.reportWait(handed, pauseEnd, sent, throttled)
	reported = true
	return p, nil
}

// slotNowLocked takes a slot for a call for key that arrives now, if it
// may have one without waiting: a free slot when nobody waits for one, but
// for those the reserved places need, which are reserved for their calls'
// retries, who come first; or the one its own reserved place took meanwhile
// (placeSlotLocked, place.go).
func (b *Budget) slotNowLocked(key uint64) (slotRef, bool) {
	if b.freeSlotsLocked() > b.placesWithoutSlotLocked() && b.slots.waiting.Head == nil {
		return b.takeSlotLocked(), true
	}
	return b.placeSlotLocked(key)
}

// handSlotLocked hands ref, a slot freed, to sw, which waits for one. An
// in-memory budget's caller is queued on b.slots.handed, and its turn reserved
// before mu is released (unlock, handedTurnsLocked); a store's is
// signalled, and takes its turn itself (acquireSlot).
func (b *Budget) handSlotLocked(sw *waiter, ref slotRef) {
	b.slots.waiting.Remove(sw)
	sw.slot = ref
	if b.pacer.scheduled() {
		b.slots.handed.Push(sw)
		return
	}
	sw.state = granted
	sw.signal()
}

// handedTurnsLocked reserves the turns of the callers handed a slot since
// mu was taken, in the order they were handed one, each as if it arrived
// now: granted at once, queued for its turn, or failed (its turn at or
// after its deadline), the slot then handed on. unlock calls it, so that no
// holder of mu ever finds a caller holding a slot and no turn.
//
//go:noinline
func (b *Budget) handedTurnsLocked() {
	now := b.now()
	for w := b.slots.handed.Head; w != nil; w = b.slots.handed.Head {
		b.slots.handed.Remove(w)
		key, ref := w.key, w.slot
		w.state, w.key = queued, 0 // (in the turn queue a key marks a reserved place: its request's key is callKey)
		q, err := b.turnLocked(w, now, w.deadline, w.res, key)
		switch {
		case err != nil:
			w.state, w.err, w.slot = failed, err, slotRef{}
			b.freeSlotLocked(ref)
			b.wake.ready.Push(w)
		case q == nil:
			w.state, w.granted, w.arrived = granted, now, now
			b.wake.ready.Push(w)
		}
	}
}

// waitSlot sleeps until sw, waiting for a slot, is signalled (true) or its
// context ends (false). mu is held on entry and released on return. The
// first in line for a slot gives up a reserved place when it is due (place.go):
// the place holds, or reserves, the slot it waits for, and a retry that
// never comes must free it.
func (b *Budget) waitSlot(ctx context.Context, sw *waiter) bool {
	for {
		var (
			timer   *time.Timer
			expired <-chan time.Time
		)
		if at := b.placeExpiryLocked(); at > 0 && b.slots.waiting.Head == sw {
			timer = time.NewTimer(time.Duration(max(0, at-b.now())))
			expired = timer.C
		}
		b.unlock()
		select {
		case <-sw.wake:
			stopTimer(timer)
			return true
		case <-ctx.Done():
			stopTimer(timer)
			return false
		case <-expired:
			b.lock()
			if sw.state == slotQueued {
				b.dispatchLocked(b.now())
			}
		}
	}
}

// stopTimer stops t, if there is one.
func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// acquireSlot is a store's wait for a concurrency slot: it returns the
// time it got one and the slot, and the caller then takes its turn from the
// store. A caller waiting for a slot fails at once, like one waiting for
// its turn, when a server pause outlasts its deadline. key names the
// request (place.go; 0: none).
func (b *Budget) acquireSlot(ctx context.Context, now, deadline int64, key uint64) (int64, slotRef, error) {
	b.lock()
	if ref, ok := b.slotNowLocked(key); ok {
		b.unlock()
		return now, ref, nil
	}
	if b.pause.until > now && b.pause.until >= deadline {
		err := b.lateErrorLocked(b.pause.until, now)
		b.unlock()
		return 0, slotRef{}, err
	}
	sw := &waiter{wake: make(chan struct{}, 1), deadline: deadline, key: key, state: slotQueued}
	b.slots.waiting.Push(sw)
	b.waitSlot(ctx, sw)
	b.lock()
	switch {
	case sw.state == failed:
		b.unlock()
		return 0, slotRef{}, sw.err
	case sw.state == granted && ctx.Err() == nil:
		b.unlock()
		return b.now(), sw.slot, nil
	case sw.state == granted: // handed over as we gave up: pass it on
		b.unlock()
		b.releaseSlot(sw.slot)
	default:
		b.slots.waiting.Remove(sw)
		b.unlock()
	}
	return 0, slotRef{}, ctx.Err()
}

// slotFreeLocked reports whether a slot is free: one freed, or one never
// used yet (slots are allocated lazily, so a huge cap costs nothing up front).
func (b *Budget) slotFreeLocked() bool {
	return len(b.slots.free) > 0 || len(b.slots.gen) < b.cfg.maxInFlight
}

// freeSlotsLocked is how many slots are free.
func (b *Budget) freeSlotsLocked() int {
	return len(b.slots.free) + b.cfg.maxInFlight - len(b.slots.gen)
}

// handFreeSlotsLocked gives free slots to the callers waiting for one, as
// far as the reserved places' reservations allow.
func (b *Budget) handFreeSlotsLocked() {
	for sw := b.slots.waiting.Head; sw != nil && b.freeSlotsLocked() > b.placesWithoutSlotLocked(); sw = b.slots.waiting.Head {
		b.handSlotLocked(sw, b.takeSlotLocked())
	}
	// The slots reserved for the places go to their retries, when they wait.
	for p := b.queue.Head; p != nil && p.reservedPlace() && b.slots.waiting.Head != nil && b.slotFreeLocked(); p = p.Next {
		if sw := b.retryWaitingLocked(p); sw != nil {
			b.handSlotLocked(sw, b.takeSlotLocked())
		}
	}
}

// retryWaitingLocked is the caller waiting for a slot that is the retry of
// the refused call whose place p is reserved without a slot, or nil. (It came
// back when no slot was free; the slot the place would take is its.)
func (b *Budget) retryWaitingLocked(p *waiter) *waiter {
	if !p.place || p.slot.idx1 != 0 || p.key == anyKey {
		return nil
	}
	for sw := b.slots.waiting.Head; sw != nil; sw = sw.Next {
		if sw.key == p.key {
			return sw
		}
	}
	return nil
}

// takeSlotLocked takes a free slot: a freed one, or else a new one.
func (b *Budget) takeSlotLocked() slotRef {
	if len(b.slots.free) == 0 {
		b.slots.gen = append(b.slots.gen, 0)
		b.slots.free = append(b.slots.free, int32(len(b.slots.gen)-1))
	}
	i := b.slots.free[len(b.slots.free)-1]
	b.slots.free = b.slots.free[:len(b.slots.free)-1]
	b.slots.inFlight++
	return slotRef{idx1: i + 1, gen: b.slots.gen[i]}
}

// releaseSlot frees a slot, handing it to the first caller waiting for one.
// A slot already freed (an older generation) is left alone.
func (b *Budget) releaseSlot(ref slotRef) {
	b.lock()
	defer b.unlock()
	b.freeSlotLocked(ref)
}

// freeSlotLocked is releaseSlot under mu. A reserved place at the head of the
// turn queue takes the slot first: its call's retry must not wait for one
// (place.go).
func (b *Budget) freeSlotLocked(ref slotRef) {
	i := ref.idx1 - 1
	if b.slots.gen[i] != ref.gen {
		return
	}
	b.slots.gen[i]++
	// (Only while callers wait for a slot: the first of them gives the
	// place up if its retry never comes, acquireSlot.)
	for p := b.queue.Head; p != nil && p.reservedPlace() && b.slots.waiting.Head != nil; p = p.Next {
		if p.place && p.slot.idx1 == 0 {
			if sw := b.retryWaitingLocked(p); sw != nil { // its retry: the slot is its
				b.handSlotLocked(sw, slotRef{idx1: ref.idx1, gen: b.slots.gen[i]})
				return
			}
			p.slot = slotRef{idx1: ref.idx1, gen: b.slots.gen[i]}
			return
		}
	}
	if sw := b.slots.waiting.Head; sw != nil {
		b.handSlotLocked(sw, slotRef{idx1: ref.idx1, gen: b.slots.gen[i]})
		return
	}
	b.slots.free = append(b.slots.free, i)
	b.slots.inFlight--
}

// failSlotWaitersLocked fails at once every caller waiting for a slot whose
// deadline the server's pause outlasts.
func (b *Budget) failSlotWaitersLocked(now int64) {
	if b.pause.until <= now {
		return
	}
	for w := b.slots.waiting.Head; w != nil; {
		next := w.Next
		if b.pause.until >= w.deadline {
			b.slots.waiting.Remove(w)
			w.state, w.err = failed, b.lateErrorLocked(b.pause.until, now)
			w.signal()
		}
		w = next
	}
}
