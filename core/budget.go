package core

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// A Budget is a client-side rate budget: every request spends from it. A
// call to Acquire waits for a free concurrency slot (WithMaxInFlight), for
// any pause the server asked for, and for its turn at the budget's pace
// (GCRA, served in arrival order); the response is then fed back with
// Permit.Observe so that one "slow down" slows every caller at once.
//
// One *Budget shared by several clients is one quota, spent from together.
// A Budget is safe for concurrent use and runs no goroutine of its own. Most
// callers never touch it directly: NewTransport does all of the above for
// an http.Client.
type Budget struct {
	// Set at construction, read-only after.
	name        string
	observer    Observer
	maxPause    time.Duration
	adaptive    Adaptive
	maxInFlight int
	disabled    bool
	epoch       time.Time // the zero of the budget's monotonic clock
	store       Store     // shared state (WithStore), or nil for the in-memory default
	storeDown   atomic.Bool
	dims        *dimSet // extra dimensions (WithDimension), or nil
	learning    bool    // NewLearningBudget: the rate comes from reports

	mu         sync.Mutex
	rate       Rate    // configured rate; guarded by mu
	burst      int64   // configured burst; guarded by mu
	burstSet   bool    // WithBurst was given; guarded by mu
	learned    bool    // a learning budget has its rate from a report; guarded by mu
	ctl        control // the feedback controller (and the adaptive factor); guarded by mu
	g          gcra    // pacing state at the effective pace; guarded by mu
	pause      pause   // the server's pause; guarded by mu
	pauseAllow int64   // how many may go at once when the pause ends; guarded by mu
	hold       int64   // the controller's own hold (a probe finds out meanwhile); guarded by mu
	holdAllow  int64   // how many may go at once when the hold ends; guarded by mu
	holdStatus int     // the status of the response that began the hold; guarded by mu
	shape      shape   // the pace the server's reported quota allows; guarded by mu
	queue      waitQueue
	inFlight   int       // open requests holding a slot; guarded by mu
	slotGen    []uint32  // each slot's generation, bumped when it is freed; guarded by mu
	freeSlots  []int32   // the slots nobody holds; guarded by mu
	slots      waitQueue // callers waiting for a slot; guarded by mu
}

// shape is what a response's Remaining, Limit and Reset allow until the
// reset: never plan to spend the remaining quota faster than it returns.
type shape struct {
	interval int64 // minimum interval; 0 for none
	burst    int64 // at most this many at once
	until    int64 // the report's reset instant
}

// NewBudget returns a budget that paces requests at rate. It returns an
// error naming the field when the rate or an option is invalid (a zero or
// negative rate, a negative cap, a NaN factor…); the error matches
// ErrInvalidConfig.
//
// By default the burst is rate.Requests, there is no concurrency cap,
// adaptive throttling is on (DefaultAdaptive) and a server pause is capped
// at DefaultMaxPause.
func NewBudget(rate Rate, opts ...Option) (*Budget, error) {
	if err := rate.validate("rate"); err != nil {
		return nil, err
	}
	c := newConfig(opts)
	if len(c.errs) > 0 {
		return nil, c.errs[0]
	}
	if len(c.dims) > 0 && c.store != nil {
		return nil, configErrorf("WithDimension", "cannot be combined with WithStore")
	}
	b := &Budget{
		name:        c.name,
		observer:    c.observer,
		maxPause:    c.maxPause,
		adaptive:    c.adaptive,
		maxInFlight: c.maxInFlight,
		epoch:       time.Now(),
		store:       c.store,
		rate:        rate,
		burstSet:    c.burstSet,
		ctl:         newControl(c.adaptive),
	}
	b.burst = int64(rate.Requests)
	if c.burstSet {
		b.burst = int64(c.burst)
	}
	if err := b.checkSpan(rate, "rate"); err != nil {
		return nil, err
	}
	if c.maxInFlight > 0 {
		b.slotGen = make([]uint32, c.maxInFlight)
		b.freeSlots = make([]int32, c.maxInFlight)
		for i := range b.freeSlots {
			b.freeSlots[i] = int32(c.maxInFlight - 1 - i)
		}
	}
	b.g = gcra{interval: int64(rate.Interval()), burst: b.burst}
	b.g.tat = math.MinInt64 / 2 // idle: the whole burst is available
	if len(c.dims) > 0 {
		b.dims = newDimSet(c.dims, c.backfill)
	}
	return b, nil
}

// MustBudget is like NewBudget but panics on invalid configuration. It is
// meant for budgets built from constants.
func MustBudget(rate Rate, opts ...Option) *Budget {
	b, err := NewBudget(rate, opts...)
	if err != nil {
		panic(err)
	}
	return b
}

// Disabled returns a budget that never waits: an unlimited rate, no
// concurrency cap, no adaptive throttling and no server pauses. Responses
// fed to it are still parsed and reported as Pushback events, so tests can
// assert on them. Use it in tests of code that takes a *Budget, so they
// never sleep.
func Disabled(opts ...Option) *Budget {
	c := newConfig(opts)
	return &Budget{
		name:     c.name,
		observer: c.observer,
		maxPause: c.maxPause,
		disabled: true,
		epoch:    time.Now(),
		rate:     Rate{Requests: math.MaxInt32, Period: time.Nanosecond},
		ctl:      newControl(Adaptive{}),
	}
}

// Name returns the name given with WithName.
func (b *Budget) Name() string { return b.name }

// now reads the budget's monotonic clock: one read, no wall clock.
func (b *Budget) now() int64 { return int64(time.Since(b.epoch)) }

// deadline returns the context's deadline on the budget's clock, or never.
func (b *Budget) deadline(ctx context.Context) int64 {
	d, ok := ctx.Deadline()
	if !ok {
		return never
	}
	return int64(d.Sub(b.epoch))
}

// A Permit is a call's admission: its turn was given and, with
// WithMaxInFlight, it holds a concurrency slot until Release. Feed the
// response to Observe.
type Permit struct {
	b        *Budget
	sent     int64 // when the turn was given, on the budget's clock
	slot     slotRef
	released bool
	res      *reservation // extra dimensions' estimate (AcquireCost), or nil
}

// slotRef names a held concurrency slot: its index plus one (0 for no
// slot) and its generation when taken. A slot freed once has a new
// generation, so a second Release, even from a copy of the Permit, frees
// nothing.
type slotRef struct {
	idx1 int32
	gen  uint32
}

// Release frees the permit's concurrency slot. It is idempotent: calling it
// again, on the same Permit or on a copy of it, does nothing. A permit from
// a budget without a cap, or the zero Permit, has nothing to free. Release
// is not safe to call on one Permit value from two goroutines at once;
// copies are.
func (p *Permit) Release() {
	if p.released || p.b == nil {
		return
	}
	p.released = true
	p.releaseCost() // an AcquireCost estimate nobody committed comes back
	if p.slot.idx1 > 0 {
		p.b.releaseSlot(p.slot)
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
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	if b.disabled {
		return Permit{b: b}, nil
	}
	if b.maxInFlight == 0 && b.store == nil { // the fast path: no slot to guard
		sent, err := b.takeTurn(ctx, b.now(), b.deadline(ctx))
		if err != nil {
			return Permit{}, err
		}
		return Permit{b: b, sent: sent}, nil
	}
	return b.acquire(ctx, nil)
}

// acquire is Acquire and AcquireCost once the context and the disabled
// budget are dealt with: a slot, then the turn (with r's extra dimensions,
// when r is not nil).
func (b *Budget) acquire(ctx context.Context, r *reservation) (Permit, error) {
	deadline := b.deadline(ctx)
	now := b.now()
	var slot slotRef
	if b.maxInFlight > 0 && r == nil && b.store == nil {
		b.mu.Lock()
		if ref, ok := b.claimPlaceSlotLocked(now); ok { // a refused call back when its wait ended
			b.mu.Unlock()
			return Permit{b: b, sent: now, slot: ref}, nil
		}
		if w := b.adoptPlaceLocked(now, deadline, true); w != nil { // back at once: it waits in its place
			ref := w.slot
			w.slot = slotRef{}
			throttled := b.g.interval > int64(b.rate.Interval())
			b.mu.Unlock()
			sent, err := b.wait(ctx, w, throttled)
			if err != nil {
				b.releaseSlot(ref)
				return Permit{}, err
			}
			return Permit{b: b, sent: sent, slot: ref}, nil
		}
		b.mu.Unlock()
	}
	if b.maxInFlight > 0 {
		at, ref, err := b.acquireSlot(ctx, now, deadline)
		if err != nil {
			return Permit{}, err
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
	var sent int64
	var err error
	switch {
	case r != nil:
		sent, err = b.takeTurnDims(ctx, now, deadline, r)
	case b.store != nil:
		sent, err = b.takeFromStore(ctx, now, deadline)
	default:
		sent, err = b.takeTurn(ctx, now, deadline)
	}
	if err != nil {
		return Permit{}, err
	}
	p := Permit{b: b, sent: sent, slot: slot, res: r}
	slot = slotRef{} // handed to the permit
	return p, nil
}

// takeTurn reserves the call's turn and waits for it. It returns the time
// the turn was given.
func (b *Budget) takeTurn(ctx context.Context, now, deadline int64) (int64, error) {
	if b.dims != nil {
		return b.takeTurnDims(ctx, now, deadline, nil)
	}
	b.mu.Lock()
	b.syncPaceLocked(now)
	if b.claimPlaceLocked(now) { // a refused call back when its wait ended
		b.mu.Unlock()
		return now, nil
	}
	if w := b.adoptPlaceLocked(now, deadline, false); w != nil { // back at once, first in line
		throttled := b.g.interval > int64(b.rate.Interval())
		b.mu.Unlock()
		return b.wait(ctx, w, throttled)
	}
	t, ok := b.g.reserve(now, b.gateLocked(), deadline)
	if !ok {
		err := b.lateErrorLocked(t.sendAt, now)
		b.mu.Unlock()
		return 0, err
	}
	if t.sendAt <= now {
		if b.queue.n > 0 {
			b.dispatchLocked(now) // those ahead are due too: let them go first
		}
		b.sentLocked(now)
		b.mu.Unlock()
		return now, nil
	}
	w := &waiter{turn: t, deadline: deadline, arrived: now, wake: make(chan struct{}, 1)}
	if b.gateLocked() > now { // the pause holds it back, whatever follows
		w.pauseEnd = b.gateLocked()
	}
	throttled := b.g.interval > int64(b.rate.Interval())
	b.queue.push(w)
	b.mu.Unlock()
	return b.wait(ctx, w, throttled)
}

// wait blocks until w is granted, fails, or its context ends.
func (b *Budget) wait(ctx context.Context, w *waiter, throttled bool) (int64, error) {
	b.mu.Lock()
	d := b.wakeLocked(w, w.arrived)
	b.mu.Unlock()
	timer := time.NewTimer(time.Duration(d))
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-w.wake:
		case <-ctx.Done():
		}
		b.mu.Lock()
		now := b.now()
		if w.state == queued {
			b.syncPaceLocked(now) // a quota report may have run out: re-time
		}
		if w.state == queued {
			switch {
			case w.turn.sendAt <= now, b.queue.head.place: // (a kept place ahead may be given up)
				b.dispatchLocked(now)
			case ctx.Err() != nil:
				b.queue.remove(w)
				b.g.cancel(w.turn)
				if w.res != nil {
					b.cancelDimsLocked(w.res)
				}
				b.mu.Unlock()
				return 0, ctx.Err()
			}
		}
		switch w.state {
		case granted:
			pauseEnd, at := w.pauseEnd, w.granted
			throttled = throttled || b.g.interval > int64(b.rate.Interval())
			b.mu.Unlock()
			b.reportWait(w.arrived, pauseEnd, at, throttled)
			return at, nil
		case failed:
			b.mu.Unlock()
			return 0, w.err
		}
		d := b.wakeLocked(w, now)
		b.mu.Unlock()
		timer.Reset(time.Duration(d))
	}
}

// wakeLocked is how long w sleeps from now: until its turn, or until the
// server's quota report that slowed the pace runs out, when the waiting
// calls are re-timed to the faster pace.
func (b *Budget) wakeLocked(w *waiter, now int64) int64 {
	at := w.turn.sendAt
	if u := b.shape.until; u > now && u < at && w == b.queue.head { // the head re-times them all
		at = u
	}
	if h := b.queue.head; h != nil && h.place && h != w {
		// Behind a kept place: not before it is taken or given up; the
		// caller next to it wakes when it is given up, to re-time the rest.
		if w == h.next {
			at = h.expire
		} else {
			at = max(at, h.expire)
		}
	}
	return at - now
}

// reportWait emits the events of one wait: the part spent in a server
// pause, then the part spent waiting for the turn.
func (b *Budget) reportWait(arrived, pauseEnd, at int64, throttled bool) {
	if b.observer == nil {
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

// dispatchLocked grants every queued waiter whose turn has come, in order.
func (b *Budget) dispatchLocked(now int64) {
	for w := b.queue.head; w != nil && w.turn.sendAt <= now; w = b.queue.head {
		if w.place {
			if now < w.expire {
				return // kept for a refused call's retry: the others wait behind it
			}
			b.givePlaceUpLocked(w, now) // nobody came back for it
			continue
		}
		b.queue.remove(w)
		w.state, w.granted = granted, now
		if w.res != nil {
			b.grantDimsLocked(w.res)
		}
		w.signal()
		if h := b.queue.head; h != nil && b.shape.until > now {
			h.signal() // the new head watches for the quota report's end
		}
		if b.sentLocked(now) {
			return // a probe went: the others are held until its answer
		}
	}
}

// lateErrorLocked builds the error of a call whose turn at sendAt comes at
// or after its deadline.
func (b *Budget) lateErrorLocked(sendAt, now int64) error {
	e := &RateLimitError{RetryAfter: time.Duration(sendAt - now), Reason: Paced, Budget: b.name}
	switch {
	case b.gateLocked() > now && (sendAt <= b.gateLocked() || b.queue.head != nil && b.queue.head.place):
		// (Held back by the pause, or by the places kept at its end.)
		e.Reason, e.StatusCode = Paused, b.gateStatusLocked()
	case b.g.interval > int64(b.rate.Interval()):
		e.Reason = Throttled
	}
	return e
}

// paceLocked returns the effective interval and burst at now: the
// configured pace slowed by adaptive throttling and by the server's
// reported quota.
func (b *Budget) paceLocked(now int64) (interval, burst int64) {
	interval = int64(b.rate.Interval())
	if f := b.ctl.factor; f < 1 {
		interval = int64(float64(interval) / f)
	}
	burst = b.burst
	if now < b.shape.until {
		interval = max(interval, b.shape.interval)
		burst = max(1, min(burst, b.shape.burst))
	}
	return interval, burst
}

// syncPaceLocked brings the pacing state to the effective pace at now,
// re-timing the callers already waiting if the pace changed.
func (b *Budget) syncPaceLocked(now int64) {
	interval, burst := b.paceLocked(now)
	if interval != b.g.interval || burst != b.g.burst || b.dimsPaceChangedLocked(now) {
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

// retimeQueueLocked is retimeLocked without the dispatch of the callers
// whose turn has come.
func (b *Budget) retimeQueueLocked(now int64) {
	if head := b.queue.head; head != nil {
		b.g.tat = head.turn.tatBefore // the state before the queued reservations
		if head.res != nil {
			b.resetDimsLocked(head.res)
		}
	}
	interval, burst := b.paceLocked(now)
	// Re-time from the end of any pause: a new pace applies to the turns
	// after it, and never stretches the pause itself.
	b.g.setPace(max(now, b.gateLocked()), interval, burst)
	if b.dims != nil {
		b.setDimsPaceLocked(now, max(now, b.gateLocked()))
	}
	b.failSlotWaitersLocked(now)
	if until, allow := b.gateAllowLocked(); until > 0 && until >= now {
		b.g.floorAfterPause(until, allow)
	}
	after := int64(math.MinInt64) // the send time of the caller re-timed last
	for w := b.queue.head; w != nil; {
		next := w.next
		var t turn
		var ok bool
		if w.res != nil {
			t, ok = b.reserveDimsLocked(now, w.deadline, w.res, after)
		} else {
			t, ok = b.g.reserve(now, b.gateLocked(), w.deadline)
		}
		switch {
		case !ok:
			if w.res != nil {
				b.dims.pending.remove(w.res)
			}
			b.queue.remove(w)
			w.state, w.err = failed, b.lateErrorLocked(t.sendAt, now)
			w.signal()
		case t != w.turn:
			w.turn = t
			if w.place {
				w.expire = t.sendAt + b.placeGraceLocked()
			} else if b.gateLocked() > now { // the pause holds it back, whatever follows
				w.pauseEnd = b.gateLocked()
			}
			w.signal()
		}
		if ok {
			after = t.sendAt
		}
		w = next
	}
}

// acquireSlot waits for a concurrency slot and returns the time it got one
// and the slot. A caller waiting for a slot fails at once, like one waiting
// for its turn, when a server pause outlasts its deadline.
func (b *Budget) acquireSlot(ctx context.Context, now, deadline int64) (int64, slotRef, error) {
	b.mu.Lock()
	if len(b.freeSlots) > 0 && b.slots.head == nil {
		ref := b.takeSlotLocked()
		b.mu.Unlock()
		return now, ref, nil
	}
	if b.gateLocked() > now && b.gateLocked() >= deadline {
		err := b.lateErrorLocked(b.gateLocked(), now)
		b.mu.Unlock()
		return 0, slotRef{}, err
	}
	sw := &waiter{wake: make(chan struct{}, 1), deadline: deadline}
	b.slots.push(sw)
	b.mu.Unlock()
	select {
	case <-sw.wake:
	case <-ctx.Done():
	}
	b.mu.Lock()
	switch {
	case sw.state == failed:
		b.mu.Unlock()
		return 0, slotRef{}, sw.err
	case sw.state == granted && ctx.Err() == nil:
		b.mu.Unlock()
		return b.now(), sw.slot, nil
	case sw.state == granted: // handed over as we gave up: pass it on
		b.mu.Unlock()
		b.releaseSlot(sw.slot)
	default:
		b.slots.remove(sw)
		b.mu.Unlock()
	}
	return 0, slotRef{}, ctx.Err()
}

// takeSlotLocked takes a free slot.
func (b *Budget) takeSlotLocked() slotRef {
	i := b.freeSlots[len(b.freeSlots)-1]
	b.freeSlots = b.freeSlots[:len(b.freeSlots)-1]
	b.inFlight++
	return slotRef{idx1: i + 1, gen: b.slotGen[i]}
}

// releaseSlot frees a slot, handing it to the first caller waiting for one.
// A slot already freed (an older generation) is left alone.
func (b *Budget) releaseSlot(ref slotRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.freeSlotLocked(ref)
}

// freeSlotLocked is releaseSlot under mu. A kept place at the head of the
// queue takes the slot first: its call's retry must not wait for one.
func (b *Budget) freeSlotLocked(ref slotRef) {
	i := ref.idx1 - 1
	if b.slotGen[i] != ref.gen {
		return
	}
	b.slotGen[i]++
	for p := b.queue.head; p != nil && p.place; p = p.next {
		if p.slot.idx1 == 0 {
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
	if b.gateLocked() <= now {
		return
	}
	for w := b.slots.head; w != nil; {
		next := w.next
		if b.gateLocked() >= w.deadline {
			b.slots.remove(w)
			w.state, w.err = failed, b.lateErrorLocked(b.gateLocked(), now)
			w.signal()
		}
		w = next
	}
}

// emit reports an event to the observer; never called under mu.
func (b *Budget) emit(e Event) {
	if b.observer != nil {
		e.Budget = b.name
		b.observer(e)
	}
}

// InFlight returns the number of open requests holding a concurrency slot
// (always 0 without WithMaxInFlight).
func (b *Budget) InFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight
}

// PauseRemaining returns how long the server's pause has left to run, or 0.
func (b *Budget) PauseRemaining() time.Duration {
	if b.disabled {
		return 0
	}
	if b.store != nil {
		st, err := b.store.Status(context.Background())
		if err != nil {
			return 0
		}
		return st.Pause
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Duration(max(0, b.gateLocked()-now))
}

// Rate returns the configured rate.
func (b *Budget) Rate() Rate {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rate
}

// EffectiveRate returns the pace the budget keeps now: the configured rate,
// slowed by adaptive throttling and by the quota the server reported. It is
// stated with the configured Requests and a stretched Period, so
// PerSecond(10) halved reads "10/2s".
func (b *Budget) EffectiveRate() Rate {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.effectiveRateLocked(now)
}

func (b *Budget) effectiveRateLocked(now int64) Rate {
	interval, _ := b.paceLocked(now)
	if interval == int64(b.rate.Interval()) {
		return b.rate
	}
	if interval > math.MaxInt64/int64(b.rate.Requests) {
		return Rate{Requests: 1, Period: time.Duration(interval)} // Requests × interval would overflow
	}
	return Rate{Requests: b.rate.Requests, Period: time.Duration(interval) * time.Duration(b.rate.Requests)}
}

// SetRate changes the configured rate at run time, for a quota the provider
// raised or lowered. Callers already waiting are re-timed to the new rate;
// the change creates no burst credit (no more requests may go at once than
// could before). The burst follows the new rate unless WithBurst set it. An
// invalid rate is an error and changes nothing.
func (b *Budget) SetRate(r Rate) error {
	if err := r.validate("SetRate"); err != nil {
		return err
	}
	if b.disabled {
		return nil
	}
	now := b.now()
	b.mu.Lock()
	if err := b.checkSpanLocked(r, "SetRate"); err != nil {
		b.mu.Unlock()
		return err
	}
	old := b.effectiveRateLocked(now)
	b.rate = r
	if !b.burstSet {
		b.burst = int64(r.Requests)
	}
	b.retimeLocked(now)
	cur := b.effectiveRateLocked(now)
	b.mu.Unlock()
	b.emit(Event{Reason: RateChanged, OldRate: old.PerSecondFloat(), NewRate: cur.PerSecondFloat()})
	return nil
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
	if b.disabled {
		return nil
	}
	deadline := b.deadline(ctx)
	if deadline == never {
		return nil
	}
	now := b.now()
	if b.store != nil {
		st, err := b.store.Status(ctx)
		if err != nil || now+int64(st.Pause) < deadline {
			return nil
		}
		return &RateLimitError{RetryAfter: st.Pause, StatusCode: st.PauseStatus, Reason: Paused, Budget: b.name}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.syncPaceLocked(now)
	g := b.g // reserve on a copy: nothing is taken
	if t, ok := g.reserve(now, b.gateLocked(), deadline); !ok {
		return b.lateErrorLocked(t.sendAt, now)
	}
	return nil
}

// MaxPause returns the longest pause a response can impose on the budget
// (WithMaxPause; DefaultMaxPause by default).
func (b *Budget) MaxPause() time.Duration { return b.maxPause }

// TryAcquire admits the call only if it can go now: a free concurrency slot
// and a turn that has come, with no pause. It never waits. Otherwise it
// returns at once: ErrNoSlot when every slot is taken, or a
// *RateLimitError whose RetryAfter says when the turn would come. Like
// every RateLimitError it matches context.DeadlineExceeded, even when ctx
// has no deadline: TryAcquire's own horizon is "now". It
// takes nothing when it fails, and never goes before callers already
// waiting in Acquire.
func (b *Budget) TryAcquire(ctx context.Context) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	if b.disabled {
		return Permit{b: b}, nil
	}
	now := b.now()
	var slot slotRef
	if b.maxInFlight > 0 {
		b.mu.Lock()
		if len(b.freeSlots) == 0 || b.slots.head != nil {
			b.mu.Unlock()
			return Permit{}, ErrNoSlot
		}
		slot = b.takeSlotLocked()
		b.mu.Unlock()
	}
	var sent int64
	var err error
	if b.store != nil {
		sent, err = b.takeFromStore(ctx, now, now+1)
	} else {
		sent, err = b.takeTurn(ctx, now, now+1)
	}
	if err != nil {
		if slot.idx1 > 0 {
			b.releaseSlot(slot)
		}
		return Permit{}, err
	}
	return Permit{b: b, sent: sent, slot: slot}, nil
}

// maxSpan is the furthest ahead the budget ever plans: 2^61 ns, about 73
// years, so that sums of its times never overflow.
const maxSpan = 1 << 61

// checkSpan rejects a rate whose burst, at the slowest pace adaptive
// throttling may reach, spans more than maxSpan. field names the culprit.
func (b *Budget) checkSpan(r Rate, field string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.checkSpanLocked(r, field)
}

func (b *Budget) checkSpanLocked(r Rate, field string) error {
	burst := b.burst
	if !b.burstSet {
		burst = int64(r.Requests)
	}
	slowest := 1.0
	if b.adaptive.Enabled() {
		slowest = b.adaptive.MinRate
	}
	if float64(r.Interval())*float64(burst)/slowest > maxSpan {
		if b.burstSet {
			field = "WithBurst"
		}
		return configErrorf(field, "spans more than 73 years at the slowest adaptive pace (burst %d × interval %v ÷ MinRate %g)", burst, r.Interval(), slowest)
	}
	return nil
}
