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

// admitCapped admits a call of a capped in-memory budget (no extra cost)
// in one critical section when it can go at once: nobody queued for a turn
// (so no kept place either, place.go), nobody waiting for a slot, a free
// slot, and a turn that has come before deadline. It returns the slot taken
// and true, the turn spent at now; otherwise it takes nothing and reports
// false, and the call takes its slot, then its turn, the long way (acquire).
func (b *Budget) admitCapped(now, deadline int64) (slotRef, bool) {
	b.lock()
	if b.queue.head != nil || b.slots.head != nil || b.freeSlotsLocked() == 0 {
		b.unlock()
		return slotRef{}, false
	}
	b.syncPaceLocked(now)
	if s, _ := b.planLocked(now, math.MinInt64, nil, 1, b.g.tat); s > now {
		b.unlock()
		return slotRef{}, false // its turn has not come
	}
	if _, _, ok := b.reserveLocked(now, deadline, math.MinInt64, nil, 1, b.g.tat); !ok {
		b.unlock()
		return slotRef{}, false // at its deadline: the long way fails it
	}
	ref := b.takeSlotLocked()
	b.grantLocked(now)
	b.unlock()
	return ref, true
}

// acquireSlot waits for a concurrency slot and returns the time it got one
// and the slot. A caller waiting for a slot fails at once, like one waiting
// for its turn, when a server pause outlasts its deadline. key names the
// request (place.go; 0: none): a refused call's retry waiting here is
// handed the slot its kept place would take (freeSlotLocked).
func (b *Budget) acquireSlot(ctx context.Context, now, deadline int64, key uint64) (int64, slotRef, error) {
	b.lock()
	// The free slots the kept places need are reserved for their calls'
	// retries, which come before this caller (place.go).
	if b.freeSlotsLocked() > b.placesWithoutSlotLocked() && b.slots.head == nil {
		ref := b.takeSlotLocked()
		b.unlock()
		return now, ref, nil
	}
	if ref, ok := b.placeSlotLocked(key); ok { // its kept place took a slot meanwhile (place.go)
		b.unlock()
		return now, ref, nil
	}
	if b.pause.until > now && b.pause.until >= deadline {
		err := b.lateErrorLocked(b.pause.until, now)
		b.unlock()
		return 0, slotRef{}, err
	}
	sw := &waiter{wake: make(chan struct{}, 1), deadline: deadline, key: key}
	b.slots.push(sw)
	for {
		// A kept place may hold the slot this caller waits for (place.go):
		// when it is due to be given up, the head of the slot queue gives
		// it up, so a retry that never comes frees its slot.
		var expired <-chan time.Time
		if at := b.placeExpiryLocked(); at > 0 && b.slots.head == sw {
			timer := time.NewTimer(time.Duration(max(0, at-b.now())))
			defer timer.Stop()
			expired = timer.C
		}
		b.unlock()
		select {
		case <-sw.wake:
		case <-ctx.Done():
		case <-expired:
			b.lock()
			if sw.state == queued {
				b.dispatchLocked(b.now())
				continue
			}
			b.unlock()
		}
		break
	}
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
		b.slots.remove(sw)
		b.unlock()
	}
	return 0, slotRef{}, ctx.Err()
}

// slotFreeLocked reports whether a slot is free: one freed, or one never
// used yet (slots are allocated lazily, so a huge cap costs nothing up front).
func (b *Budget) slotFreeLocked() bool {
	return len(b.freeSlots) > 0 || len(b.slotGen) < b.maxInFlight
}

// freeSlotsLocked is how many slots are free.
func (b *Budget) freeSlotsLocked() int {
	return len(b.freeSlots) + b.maxInFlight - len(b.slotGen)
}

// handFreeSlotsLocked gives free slots to the callers waiting for one, as
// far as the kept places' reservations allow.
func (b *Budget) handFreeSlotsLocked() {
	for sw := b.slots.head; sw != nil && b.freeSlotsLocked() > b.placesWithoutSlotLocked(); sw = b.slots.head {
		b.slots.remove(sw)
		sw.state, sw.slot = granted, b.takeSlotLocked()
		sw.signal()
	}
	// The slots reserved for the places go to their retries, when they wait.
	for p := b.queue.head; p != nil && p.kept() && b.slots.head != nil && b.slotFreeLocked(); p = p.next {
		if sw := b.retryWaitingLocked(p); sw != nil {
			b.slots.remove(sw)
			sw.state, sw.slot = granted, b.takeSlotLocked()
			sw.signal()
		}
	}
}

// retryWaitingLocked is the caller waiting for a slot that is the retry of
// the refused call whose place p is kept without a slot, or nil. (It came
// back when no slot was free; the slot the place would take is its.)
func (b *Budget) retryWaitingLocked(p *waiter) *waiter {
	if !p.place || p.slot.idx1 != 0 || p.key == anyKey {
		return nil
	}
	for sw := b.slots.head; sw != nil; sw = sw.next {
		if sw.key == p.key {
			return sw
		}
	}
	return nil
}

// takeSlotLocked takes a free slot: a freed one, or else a new one.
func (b *Budget) takeSlotLocked() slotRef {
	if len(b.freeSlots) == 0 {
		b.slotGen = append(b.slotGen, 0)
		b.freeSlots = append(b.freeSlots, int32(len(b.slotGen)-1))
	}
	i := b.freeSlots[len(b.freeSlots)-1]
	b.freeSlots = b.freeSlots[:len(b.freeSlots)-1]
	b.inFlight++
	return slotRef{idx1: i + 1, gen: b.slotGen[i]}
}

// releaseSlot frees a slot, handing it to the first caller waiting for one.
// A slot already freed (an older generation) is left alone.
func (b *Budget) releaseSlot(ref slotRef) {
	b.lock()
	defer b.unlock()
	b.freeSlotLocked(ref)
}

// freeSlotLocked is releaseSlot under mu. A kept place at the head of the
// turn queue takes the slot first: its call's retry must not wait for one
// (place.go).
func (b *Budget) freeSlotLocked(ref slotRef) {
	i := ref.idx1 - 1
	if b.slotGen[i] != ref.gen {
		return
	}
	b.slotGen[i]++
	// (Only while callers wait for a slot: the first of them gives the
	// place up if its retry never comes, acquireSlot.)
	for p := b.queue.head; p != nil && p.kept() && b.slots.head != nil; p = p.next {
		if p.place && p.slot.idx1 == 0 {
			if sw := b.retryWaitingLocked(p); sw != nil { // its retry: the slot is its
				b.slots.remove(sw)
				sw.state, sw.slot = granted, slotRef{idx1: ref.idx1, gen: b.slotGen[i]}
				sw.signal()
				return
			}
			p.slot = slotRef{idx1: ref.idx1, gen: b.slotGen[i]}
			return
		}
	}
	if sw := b.slots.head; sw != nil {
		b.slots.remove(sw)
		sw.state, sw.slot = granted, slotRef{idx1: ref.idx1, gen: b.slotGen[i]}
		sw.signal()
		return
	}
	b.freeSlots = append(b.freeSlots, i)
	b.inFlight--
}

// failSlotWaitersLocked fails at once every caller waiting for a slot whose
// deadline the server's pause outlasts.
func (b *Budget) failSlotWaitersLocked(now int64) {
	if b.pause.until <= now {
		return
	}
	for w := b.slots.head; w != nil; {
		next := w.next
		if b.pause.until >= w.deadline {
			b.slots.remove(w)
			w.state, w.err = failed, b.lateErrorLocked(b.pause.until, now)
			w.signal()
		}
		w = next
	}
}
