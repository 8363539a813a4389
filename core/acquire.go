package core

import (
	"context"
	"time"
)

// A Permit is a call's admission: its turn was given and, with
// WithMaxInFlight, it holds a concurrency slot until Release. Feed the
// response to Observe.
type Permit struct {
	b    *Budget
	sent int64        // when the turn was given, on the budget's clock
	slot slotRef      // the concurrency slot held, or none (idx1 0)
	res  *reservation // extra dimensions' estimate (AcquireCost), or nil
	key  uint64       // the request's key, when a Transport's (place.go); 0: none
	// (No released flag: Release clears slot and res, and a copy's second
	// Release finds the slot's generation moved on and the reservation
	// settled. Five words, so a Permit returns in registers.)
}

// Release frees the permit's concurrency slot. It is idempotent: calling it
// again, on the same Permit or on a copy of it, does nothing. A permit from
// a budget without a cap, or the zero Permit, has nothing to free. Release
// is not safe to call on one Permit value from two goroutines at once;
// copies are.
func (p *Permit) Release() {
	if p.b == nil {
		return
	}
	if p.res != nil {
		p.releaseCost() // an AcquireCost estimate nobody committed comes back
		p.res = nil
	}
	if p.slot.idx1 > 0 {
		p.b.releaseSlot(p.slot)
		p.slot = slotRef{}
	}
}

// Budget returns the budget that gave the permit (nil for the zero Permit).
func (p *Permit) Budget() *Budget { return p.b }

// Acquire waits until the call may be sent: first for a concurrency slot
// (WithMaxInFlight), then for the end of any server pause and for the call's
// turn at the budget's pace. Waiters are served in arrival order.
//
// A context already done never spends a turn. A call whose turn, or the end
// of the pause, comes at or after the context's deadline does not wait: it
// gives the turn back and returns a *RateLimitError (which matches
// context.DeadlineExceeded). A call cancelled while it waits gives its turn
// back when nobody reserved after it, frees its slot and returns the
// context's error.
//
// On success the caller sends the request, passes the response to
// Permit.Observe and calls Permit.Release when the response is done with.
func (b *Budget) Acquire(ctx context.Context) (Permit, error) {
	// acquireKeyed(ctx, 0), spelled out so that it inlines into the caller:
	// no frame of a Permit's between the caller and a wait (acquireKeyed).
	if b.cfg.maxInFlight > 0 || b.pacer == nil {
		return b.acquireCapped(ctx, 0)
	}
	sent, err := b.turn(ctx, 0)
	if err != nil {
		return Permit{}, err
	}
	return Permit{b: b, sent: sent}, nil
}

// acquireKeyed is Acquire for the request key names (place.go), 0: none.
//
// What lies between a waiting caller and the entry point stays small (turn
// does the work, not the frame that builds the Permit): a fresh goroutine's
// first call waits below it, in the mutex, the allocator or the channel,
// and a chain that fits the goroutine's first stack never pays for growing
// it.
func (b *Budget) acquireKeyed(ctx context.Context, key uint64) (Permit, error) {
	if b.cfg.maxInFlight > 0 || b.pacer == nil {
		return b.acquireCapped(ctx, key)
	}
	// No slot to guard: the fast lane (fast.go), else the turn.
	sent, err := b.turn(ctx, key)
	if err != nil {
		return Permit{}, err
	}
	return Permit{b: b, sent: sent, key: key}, nil
}

// acquireCapped is acquireKeyed for a budget that never waits or has a
// concurrency cap.
func (b *Budget) acquireCapped(ctx context.Context, key uint64) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	if b.pacer == nil {
		return Permit{b: b}, nil
	}
	return b.acquire(ctx, nil, key)
}

// turn is the turn of a call with no slot and no extra cost: the fast
// lane's, else the pacer's; an in-memory budget's is taken without the
// interface call, and waited for one frame up from takeTurn. A context
// already done spends nothing.
func (b *Budget) turn(ctx context.Context, key uint64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now, deadline := b.now(), b.deadline(ctx)
	if b.admitFast(now, deadline) {
		return now, nil
	}
	var (
		w   *waiter
		err error
	)
	if !b.pacer.scheduled() {
		now, err = b.pacer.turn(ctx, now, deadline, nil, key)
	} else if now, w, err = b.takeTurn(now, deadline, nil, key); w != nil {
		now, err = b.wait(ctx, w)
	}
	if err != nil {
		return 0, withDeadline(ctx, err)
	}
	return now, nil
}

// acquire is Acquire and AcquireCost once the context and the disabled
// budget are dealt with: a slot, then the turn (with r's extra dimensions,
// when r is not nil), for the request key names (0: none).
func (b *Budget) acquire(ctx context.Context, r *reservation, key uint64) (Permit, error) {
	deadline := b.deadline(ctx)
	now := b.now()
	var slot slotRef
	if b.cfg.maxInFlight > 0 && b.pacer.scheduled() {
		if r == nil {
			if ref, ok := b.admitCapped(now, deadline); ok { // the slot and the turn at once: slots.go
				return Permit{b: b, sent: now, slot: ref, key: key}, nil
			}
			if p, ok, err := b.placeWithSlot(ctx, now, deadline, key); ok { // a refused call back: place.go
				return p, withDeadline(ctx, err)
			}
		}
		return b.acquireSlotTurn(ctx, now, deadline, r, key) // the slot, then the turn, in arrival order: slots.go
	}
	if b.cfg.maxInFlight > 0 { // a store's: the slot, then the store's turn
		at, ref, err := b.acquireSlot(ctx, now, deadline, key)
		if err != nil {
			return Permit{}, withDeadline(ctx, err)
		}
		slot = ref
		// Until the permit is returned, any way out frees the slot: an
		// error, or a panic in an observer reporting a wait.
		defer func() {
			if slot.idx1 > 0 {
				b.releaseSlot(slot)
			}
		}()
		if at > now {
			b.emit(Event{Reason: SlotWait, Wait: time.Duration(at - now)})
		}
		now = at
	}
	sent, err := b.pacer.turn(ctx, now, deadline, r, key)
	if err != nil {
		return Permit{}, withDeadline(ctx, err)
	}
	p := Permit{b: b, sent: sent, slot: slot, res: r, key: key}
	slot = slotRef{} // handed to the permit
	return p, nil
}

// TryAcquire admits the call only if it can go now: a free concurrency slot
// and a turn that has come, with no pause. It never waits. Otherwise it
// returns at once: ErrNoSlot when every slot is taken, or a
// *RateLimitError whose RetryAfter says when the turn would come. That
// error has no Deadline and does not match context.DeadlineExceeded:
// TryAcquire's horizon is "now", not a deadline of the caller's. It takes
// nothing when it fails, and never goes before callers already waiting in
// Acquire.
func (b *Budget) TryAcquire(ctx context.Context) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	if b.pacer == nil {
		return Permit{b: b}, nil
	}
	now := b.now()
	var slot slotRef
	if b.cfg.maxInFlight > 0 {
		b.lock()
		if b.freeSlotsLocked() <= b.placesWithoutSlotLocked() || b.slots.waiting.Head != nil { // (place.go: reserved)
			b.unlock()
			return Permit{}, ErrNoSlot
		}
		slot = b.takeSlotLocked()
		b.unlock()
	}
	if slot.idx1 == 0 && b.admitFast(now, now+1) { // fast.go
		return Permit{b: b, sent: now}, nil
	}
	sent, err := b.pacer.turn(ctx, now, now+1, nil, 0)
	if err != nil {
		if slot.idx1 > 0 {
			b.releaseSlot(slot)
		}
		return Permit{}, err
	}
	return Permit{b: b, sent: sent, slot: slot}, nil
}

// Check returns the error Acquire(ctx) would return at once — a
// *RateLimitError when the server's pause or the call's turn ends at or
// after ctx's deadline, or ctx's own error when it is done — without taking
// a slot or a turn. It returns nil when Acquire would wait or admit. Retry
// layers use it to fail fast instead of sleeping into a deadline.
func (b *Budget) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.pacer == nil {
		return nil
	}
	deadline := b.deadline(ctx)
	if deadline == never {
		return nil
	}
	return withDeadline(ctx, b.pacer.check(ctx, b.now(), deadline))
}

// withDeadline stamps a *RateLimitError with the deadline of the context
// it was refused against; every other error passes through. The entry
// points that wait for a deadline (Acquire, AcquireCost, Check) call it.
func withDeadline(ctx context.Context, err error) error {
	if rl, ok := err.(*RateLimitError); ok {
		rl.Deadline, _ = ctx.Deadline()
	}
	return err
}
