package core

import (
	"cmp"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate-go/headgate/core/internal/quota"
	"github.com/headgate-go/headgate/core/ratelimit"

	"github.com/headgate-go/headgate/core/internal/gcra"
)

// A Budget is a client-side rate budget: every request spends from it. A
// call to Acquire waits for a free concurrency slot (WithMaxInFlight), for
// any pause the server asked for, and for its turn at the budget's pace
// (GCRA, served in arrival order); the response is then fed back with
// Permit.Observe so that one "slow down" slows every caller at once.
//
// One *Budget shared by several clients is one quota, spent from together.
// A Budget is safe for concurrent use and runs no goroutine of its own:
// while callers wait, one timer (time.AfterFunc) grants their turns as they
// come, and it is idle when nobody waits. Most callers never touch it
// directly: NewTransport does all of the above for an http.Client.
//
// The zero Budget is valid and never waits, like Disabled(): it admits every
// call at once, caps nothing and ignores pauses. Build budgets that pace
// with NewBudget.
type Budget struct {
	cfg   settings // set at construction, read-only after
	pacer pacer    // the mode (pacer.go); nil: never waits (Disabled, the zero Budget)
	dims  *dimSet  // extra dimensions (WithDimension), or nil

	lane    atomic.Pointer[laneState] // the fast lane (fast.go); nil: none, for good
	waiters sync.Pool                 // recycled waiters, each with its channel (queue.go)

	_      [64]byte // (what the admit path reads stays off the line mu's writes move)
	mu     sync.Mutex
	lastAt atomic.Int64 // lastSendAtLocked as of the last unlock (or the last grant): a hint read without mu by takeTurn and placeWithSlot

	// Guarded by mu.
	pace  pace        // the configured rate and burst (SetRate)
	model quota.Model // the estimate of the server's quota, and the decision (internal/quota)
	g     gcra.State  // pacing state at the configured pace (internal/gcra)
	sent  int64       // the grant record: the tat of the turns granted so far, at the configured pace (scheduler.go: rewindLocked)
	queue waitQueue   // callers waiting for their turn (queue.go)
	pause serverPause // the server's stated pause, and the waits it causes (pause.go)
	wake  wakeup      // the queue's timer, and the callers to signal at unlock (wake.go)
	slots slotPool    // concurrency slots, WithMaxInFlight (slots.go)
}

// settings is a budget's configuration: set at construction, read-only
// after.
type settings struct {
	name        string
	observer    Observer
	maxPause    time.Duration
	profile     ratelimit.Profile // how responses are read (WithProfile)
	maxInFlight int
	epoch       time.Time // the zero of the budget's monotonic clock
	learning    bool      // NewLearningBudget: configured with no rate
	adaptive    Adaptive  // the pace's response to refusals reporting no quota
	burstSet    bool      // WithBurst was given
}

// pace is the configured pace: what SetRate changes. The GCRA state
// follows it at syncPaceLocked.
type pace struct {
	rate  Rate
	burst int64
}

// lock takes mu and closes the fast lane, carrying the tat it moved into
// b.g and counting the calls it admitted in the estimate (on the lane, at
// the last one's instant). Every holder of the budget's mu takes it this
// way.
func (b *Budget) lock() {
	b.mu.Lock()
	if l := b.lane.Load(); l != nil && l.tat.Load() != closedLane {
		if t := l.tat.Swap(closedLane); t != closedLane {
			b.g.TAT = t
			b.sent = max(b.sent, t) // (the lane admits at the configured pace: its tat is the record too)
			if n := l.granted.Swap(0); n > 0 {
				b.model.Sent(l.last.Load(), int(n))
			}
		}
	}
}

// unlock reserves the turns of the callers handed a slot, sets the queue's
// timer for the queue as it is (wake.go), releases mu and signals the
// callers granted or failed meanwhile. Every holder of the budget's mu
// releases it this way.
func (b *Budget) unlock() {
	if b.slots.handed.Head != nil {
		b.handedTurnsLocked() // callers handed a slot take their turns first (slots.go)
	}
	if b.queue.Head != nil {
		if d, set := b.armLocked(); set {
			// (Set here, not in armLocked: a frame less under a runtime
			// timer operation, which often runs on a fresh goroutine's
			// first stack, whose growth costs more than the operation.)
			if b.wake.timer == nil {
				b.wake.timer = time.AfterFunc(d, b.onTimer)
			} else {
				b.wake.timer.Reset(d)
			}
		}
	}
	if at := b.lastSendAtLocked(); b.lastAt.Load() != at {
		b.lastAt.Store(at) // (read without mu, as a hint: takeTurn)
	}
	w := b.wake.takeReady()
	b.mu.Unlock()
	for w != nil {
		next := w.Next // (read before the signal: w is its goroutine's from then on)
		w.signal()
		w = next
	}
}

// NewBudget returns a budget that paces requests at rate. It returns an
// error when the rate or an option is invalid (a zero or negative rate, a
// negative cap, a NaN factor…): every fault found, each naming its field,
// joined with errors.Join; the error matches ErrInvalidConfig.
//
// By default the burst is rate.Requests, there is no concurrency cap,
// adaptive throttling is on (DefaultAdaptive) and a server pause is capped
// at DefaultMaxPause.
func NewBudget(rate Rate, opts ...Option) (*Budget, error) {
	return newBudget(rate, newConfig(opts), false)
}

// newBudget builds a budget at rate with configuration c; learning: configured
// with no rate (NewLearningBudget), rate is unbounded.
func newBudget(rate Rate, c config, learning bool) (*Budget, error) {
	if err := rate.validate("rate"); err != nil {
		c.errs = append([]error{err}, c.errs...)
	}
	if c.backfill && c.store != nil {
		c.fail(configErrorf("WithBackfill", "cannot be combined with WithStore (a store serves its turns in order)"))
	}
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	b := &Budget{
		cfg: settings{
			name:        c.name,
			observer:    c.observer,
			maxPause:    c.maxPause,
			profile:     c.profile,
			maxInFlight: c.maxInFlight,
			epoch:       time.Now().Add(-time.Second), // (no instant on its clock is 0, which the estimate reads as none)
			burstSet:    c.burstSet,
			learning:    learning,
			adaptive:    c.adaptive,
		},
		pace: pace{rate: rate},
	}
	b.pacer = memPacer{b}
	if c.store != nil {
		b.pacer = newStorePacer(b, c.store, c.dims)
	}
	b.pace.burst = int64(rate.Requests)
	if c.burstSet {
		b.pace.burst = int64(c.burst)
	}
	if err := b.checkSpan(rate, "rate"); err != nil {
		return nil, err
	}
	b.g = gcra.New(int64(rate.Interval()), b.pace.burst)
	b.model = quota.New(b.modelConfig())
	if c.store == nil && len(c.dims) == 0 && c.maxInFlight == 0 {
		b.lane.Store(newLane(b.g.Interval, b.g.Burst)) // closed until the first call opens it
	}
	if len(c.dims) > 0 {
		b.dims = newDimSet(c.dims, c.backfill)
	}
	return b, nil
}

// modelConfig is what the budget tells its estimate: the configured pace
// (none for a learning budget), the cap on any wait a response causes,
// and adaptive throttling.
func (b *Budget) modelConfig() quota.Config {
	c := quota.Config{Interval: int64(b.pace.rate.Interval()), Burst: b.pace.burst, MaxWait: int64(b.MaxPause())}
	if b.cfg.learning {
		c.Interval, c.Burst = 0, 0
	}
	if b.cfg.adaptive.Enabled() {
		c.Decrease, c.MinRate, c.Increase = b.cfg.adaptive.Decrease, b.cfg.adaptive.MinRate, b.cfg.adaptive.Increase
	}
	return c
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
// never sleep. Invalid options are errors, as for NewBudget; options that
// only pace (WithBurst, WithMaxInFlight, WithStore, WithDimension…) are
// checked and then have nothing to do.
func Disabled(opts ...Option) (*Budget, error) {
	c := newConfig(opts)
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	return &Budget{
		cfg:  settings{name: c.name, observer: c.observer, maxPause: c.maxPause, profile: c.profile, epoch: time.Now()},
		pace: pace{rate: Rate{Requests: math.MaxInt32, Period: time.Nanosecond}},
	}, nil
}

// NewBudgetOrDisabled is NewBudget for a rate read from configuration,
// where leaving the rate out means "no limit": the zero Rate (an unset or
// empty rate) gives Disabled(opts...), a budget that never waits; any other
// rate gives NewBudget(rate, opts...), with its errors. Invalid options are
// errors in both cases.
//
// It is the only place where a zero rate means "disabled": NewBudget,
// ParseRate and SetRate reject it.
func NewBudgetOrDisabled(rate Rate, opts ...Option) (*Budget, error) {
	if rate != (Rate{}) {
		return NewBudget(rate, opts...)
	}
	return Disabled(opts...)
}

// Name returns the name given with WithName.
func (b *Budget) Name() string { return b.cfg.name }

// now reads the budget's monotonic clock: one read, no wall clock.
func (b *Budget) now() int64 { return int64(time.Since(b.cfg.epoch)) }

// deadline returns the context's deadline on the budget's clock, or never.
func (b *Budget) deadline(ctx context.Context) int64 {
	d, ok := ctx.Deadline()
	if !ok {
		return never
	}
	return int64(d.Sub(b.cfg.epoch))
}

// emit reports an event to the observer; never called under mu.
func (b *Budget) emit(e Event) {
	if b.cfg.observer != nil {
		e.Budget = b.cfg.name
		b.cfg.observer(e)
	}
}

// InFlight returns the number of open requests holding a concurrency slot
// (always 0 without WithMaxInFlight).
func (b *Budget) InFlight() int {
	b.lock()
	defer b.unlock()
	return b.slots.inFlight
}

// PauseRemaining returns what is left of the wait the server stated (its
// pause: a Retry-After, or a refusal's reset), or 0; for a budget on a
// Store, the fleet's pause. A retry layer that sleeps it, then sends, waits
// in the budget for the rest: what its estimate of the server's quota
// holds the call for is not known for sure, and a call in the budget's
// queue goes the instant it may (a refused call's retry first).
func (b *Budget) PauseRemaining() time.Duration {
	if b.pacer == nil {
		return 0
	}
	return b.pacer.pauseLeft()
}

// Rate returns the configured rate; for a learning budget, the rate it
// learnt (one request per second until it learns one).
func (b *Budget) Rate() Rate {
	b.lock()
	defer b.unlock()
	if b.cfg.learning {
		return b.learntRateLocked()
	}
	return b.pace.rate
}

// learntRateLocked is a learning budget's estimate of the server's rate.
func (b *Budget) learntRateLocked() Rate {
	r, ok := b.model.Rate()
	if !ok || r <= 0 {
		return Rate{Requests: 1, Period: time.Second}
	}
	return rateOf(r)
}

// rateOf is perSecond as a Rate, in whole requests per a period.
func rateOf(perSecond float64) Rate {
	if perSecond >= 1 {
		return Rate{Requests: int(math.Round(perSecond)), Period: time.Second}
	}
	return Rate{Requests: 1, Period: time.Duration(float64(time.Second) / perSecond)}
}

// EffectiveRate returns the pace the budget keeps now: the configured rate,
// slowed by adaptive throttling or by the rate the server's reports show
// when that is slower. A slowed rate is stated with the configured Requests
// and a stretched Period, so PerSecond(10) halved reads "10/2s".
func (b *Budget) EffectiveRate() Rate {
	b.lock()
	defer b.unlock()
	return b.effectiveRateLocked()
}

func (b *Budget) effectiveRateLocked() Rate {
	if b.pacer == nil {
		return b.pace.rate
	}
	if b.cfg.learning {
		return b.learntRateLocked()
	}
	f := b.pacer.factorLocked()
	if f >= 1 {
		return b.pace.rate
	}
	if p := float64(b.pace.rate.Period) / f; p < math.MaxInt64 {
		return Rate{Requests: b.pace.rate.Requests, Period: time.Duration(p)}
	}
	// Requests × the slowed interval would overflow: one request per it.
	if iv := float64(b.pace.rate.Interval()) / f; iv < math.MaxInt64 {
		return Rate{Requests: 1, Period: time.Duration(iv)}
	}
	return Rate{Requests: 1, Period: math.MaxInt64}
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
	if b.pacer == nil {
		return nil
	}
	now := b.now()
	b.lock()
	if err := b.checkSpanLocked(r, "SetRate"); err != nil {
		b.unlock()
		return err
	}
	old := b.effectiveRateLocked()
	b.pace.rate = r
	if !b.cfg.burstSet {
		b.pace.burst = int64(r.Requests)
	}
	b.model.SetInterval(int64(r.Interval()))
	b.retimeLocked(now)
	cur := b.effectiveRateLocked()
	b.unlock()
	b.emit(Event{Reason: RateChanged, OldRate: old.PerSecondFloat(), NewRate: cur.PerSecondFloat()})
	return nil
}

// MaxPause returns the longest pause a response can impose on the budget
// (WithMaxPause; DefaultMaxPause by default).
func (b *Budget) MaxPause() time.Duration { return cmp.Or(b.cfg.maxPause, DefaultMaxPause) }

// Times on the budget's clock (internal/gcra): never is no deadline and
// nothing to wait for, idle the tat of a state nobody has spent from, and
// maxSpan the furthest ahead the budget ever plans (about 73 years), so
// that sums of its times never overflow.
const (
	never   = gcra.Never
	idle    = gcra.Idle
	maxSpan = gcra.MaxSpan
)

// checkSpan rejects a rate whose burst, at the slowest pace adaptive
// throttling may reach, spans more than maxSpan. field names the culprit.
func (b *Budget) checkSpan(r Rate, field string) error {
	b.lock()
	defer b.unlock()
	return b.checkSpanLocked(r, field)
}

func (b *Budget) checkSpanLocked(r Rate, field string) error {
	burst := b.pace.burst
	if !b.cfg.burstSet {
		burst = int64(r.Requests)
	}
	slowest := 1.0
	if b.cfg.adaptive.Enabled() {
		slowest = b.cfg.adaptive.MinRate
	}
	if float64(r.Interval())*float64(burst)/slowest > maxSpan {
		if b.cfg.burstSet {
			field = "WithBurst"
		}
		return configErrorf(field, "spans more than 73 years at the slowest adaptive pace (burst %d × interval %v ÷ MinRate %g)", burst, r.Interval(), slowest)
	}
	return nil
}
