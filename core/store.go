package core

import (
	"context"
	"math"
	"sync"
	"time"
)

// A Store holds a budget's pacing state — the GCRA arrival time, the
// server's pause and the adaptive factor — somewhere several budgets can
// share it: every budget built WithStore on the same store spends from one
// quota, and a pause or a rate decrease one of them sees applies to all.
// The redisstore module keeps it in Redis for a fleet of processes;
// MemoryStore keeps it in memory.
//
// Times in Turn and Report are on the store's own clock (nanoseconds), so
// the clocks of the processes sharing a store do not matter. Methods must be
// safe for concurrent use; they are called outside the budget's lock.
//
// A budget on a store still serves its own callers' slots locally
// (WithMaxInFlight is per budget). A call waits for the turn the store gave
// it; if the budget hears of a pause meanwhile (a response it sent), the
// call takes a turn again behind the pause. A pause or decrease another
// budget reported re-times only the calls that take their turn after it,
// and the quota reports (Remaining/Reset) that shape an in-memory budget's
// pace are not shared. Check covers the store's pause, not its pace.
type Store interface {
	// Take reserves the next turn at pace p, not before the end of the
	// shared pause. If the turn would come maxWait or more from now
	// (maxWait < 0: no limit), nothing is reserved and Turn.Granted is
	// false.
	Take(ctx context.Context, p Pace, maxWait time.Duration) (Turn, error)
	// Refund gives a granted turn back if nobody took a turn after it.
	Refund(ctx context.Context, t Turn) error
	// Report applies a response's feedback — the pause it asked for, and
	// adaptive throttling — and returns the state after it.
	Report(ctx context.Context, r Report) (StoreStatus, error)
	// Status returns the time left in the shared pause and the status of the
	// response that set it, and the adaptive factor.
	Status(ctx context.Context) (StoreStatus, error)
}

// Pace is the configured pace a budget asks a store for; the store applies
// the shared adaptive factor and the pause.
type Pace struct {
	Interval time.Duration // the configured emission interval, > 0
	Burst    int           // requests that may go back to back, >= 1
	Adaptive Adaptive      // the budget's adaptive throttling (zero: off)
}

// A Turn is a reservation a store granted (or refused).
type Turn struct {
	Granted bool          // false: the turn came at or after maxWait; nothing reserved
	Wait    time.Duration // from the store's now until the turn
	At      int64         // the turn on the store's clock
	Paused  bool          // the turn was held back by a server pause
	Status  int           // the status that set that pause
	Factor  float64       // the adaptive factor the turn was paced at
	// TatBefore and TatAfter are the arrival times around the reservation,
	// for Refund.
	TatBefore, TatAfter int64
	// Fallback is non-nil when the store could not reach its shared state
	// and answered from a local fallback (failing open); it says why.
	Fallback error
}

// A Report is one response's feedback, for Store.Report.
type Report struct {
	Status  int
	Pause   time.Duration // the pause the response asked for; 0 for none
	Allow   int           // how many may go at once when the pause ends (the quota's limit); 0: the burst
	Refused bool          // a 429, 503 or spent quota: an adaptive decrease
	Sent    int64         // when the request was sent, on the store's clock (Turn.At)
	Pace    Pace
}

// StoreStatus is what Store.Status reports.
type StoreStatus struct {
	Pause       time.Duration
	PauseStatus int
	Factor      float64
	Fallback    error // as in Turn: answered from a local fallback, and why
}

// WithStore keeps the budget's pacing state in s instead of in the budget,
// so several budgets (in several processes) spend from one quota. The
// in-memory state is the default and the fast path.
func WithStore(s Store) Option {
	return optionFunc(func(c *config) { c.store = s })
}

// MemoryStore is a Store in memory: the budgets built on one MemoryStore
// share one quota, one pause and one adaptive factor. It is the reference
// for other stores' behaviour; a single budget is faster without it.
type MemoryStore struct {
	epoch time.Time

	mu    sync.Mutex
	g     gcra  // guarded by mu
	aimd  aimd  // guarded by mu
	pause pause // guarded by mu
}

// NewMemoryStore returns an empty MemoryStore: an idle quota, no pause.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{epoch: time.Now(), g: gcra{tat: math.MinInt64 / 2}, aimd: newAIMD()}
}

func (s *MemoryStore) now() int64 { return int64(time.Since(s.epoch)) }

// pace brings g to p at the shared factor, at now.
func (s *MemoryStore) paceLocked(p Pace, now int64) {
	interval := int64(float64(p.Interval) / s.aimd.factor)
	if s.g.interval == 0 {
		s.g.interval, s.g.burst = interval, int64(p.Burst)
		return
	}
	s.g.setPace(max(now, s.pause.until), interval, int64(p.Burst)) // never stretches a pause
}

// Take implements Store.
func (s *MemoryStore) Take(_ context.Context, p Pace, maxWait time.Duration) (Turn, error) {
	now := s.now()
	deadline := int64(never)
	if maxWait >= 0 {
		deadline = now + int64(maxWait)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paceLocked(p, now)
	t, ok := s.g.reserve(now, s.pause.until, deadline)
	return Turn{
		Granted: ok, Wait: time.Duration(t.sendAt - now), At: t.sendAt,
		Paused: s.pause.holds(now, t.sendAt), Status: s.pause.status, Factor: s.aimd.factor,
		TatBefore: t.tatBefore, TatAfter: t.tatAfter,
	}, nil
}

// Refund implements Store.
func (s *MemoryStore) Refund(_ context.Context, t Turn) error {
	s.mu.Lock()
	s.g.cancel(turn{sendAt: t.At, tatBefore: t.TatBefore, tatAfter: t.TatAfter})
	s.mu.Unlock()
	return nil
}

// Report implements Store.
func (s *MemoryStore) Report(_ context.Context, r Report) (StoreStatus, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aimd.observe(r.Pace.Adaptive, r.Refused, r.Status, r.Sent, now)
	s.paceLocked(r.Pace, now)
	if r.Pause > 0 && s.pause.extend(now+int64(r.Pause), r.Status) {
		s.g.floorAfterPause(s.pause.until, int64(cmpOr(r.Allow, r.Pace.Burst)))
	}
	return s.statusLocked(now), nil
}

// Status implements Store.
func (s *MemoryStore) Status(context.Context) (StoreStatus, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(now), nil
}

func (s *MemoryStore) statusLocked(now int64) StoreStatus {
	return StoreStatus{Pause: time.Duration(max(0, s.pause.until-now)), PauseStatus: s.pause.status, Factor: s.aimd.factor}
}

// pause is a server-requested pause: its end and the status that set it.
type pause struct {
	until  int64
	status int
}

// extend makes the pause last until at least until; a shorter pause never
// shortens it. It reports whether the end moved.
func (p *pause) extend(until int64, status int) bool {
	if until <= p.until {
		return false
	}
	p.until, p.status = until, status
	return true
}

// holds reports whether a turn at sendAt was held back by the pause.
func (p *pause) holds(now, sendAt int64) bool { return p.until > now && sendAt <= p.until }

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// takeFromStore is Acquire's turn when the state is in a Store: one call
// to Take, then a wait for the turn; a cancelled wait refunds the turn.
func (b *Budget) takeFromStore(ctx context.Context, now, deadline int64) (int64, error) {
	for {
		at, retake, err := b.takeFromStoreOnce(ctx, now, deadline)
		if !retake {
			return at, err
		}
		now = b.now()
	}
}

// takeFromStoreOnce takes one turn from the store and waits for it. If a
// pause this budget heard of began while it waited, the turn is given back
// and retake is true: the call takes a turn again, behind the pause.
func (b *Budget) takeFromStoreOnce(ctx context.Context, now, deadline int64) (at int64, retake bool, err error) {
	maxWait := time.Duration(-1)
	if deadline != never {
		maxWait = time.Duration(deadline - now)
	}
	t, err := b.store.Take(ctx, b.storePace(), maxWait)
	if ctx.Err() == nil {
		b.storeHealth(cmpErr(err, t.Fallback))
	}
	if err != nil {
		return 0, false, err
	}
	b.mu.Lock()
	b.ctl.factor = t.Factor
	pauseSeen := b.pause.until
	b.mu.Unlock()
	reason := Paced
	if t.Factor < 1 {
		reason = Throttled
	}
	if !t.Granted {
		e := &RateLimitError{RetryAfter: t.Wait, Reason: reason, Budget: b.name}
		if t.Paused {
			e.Reason, e.StatusCode = Paused, t.Status
		}
		return 0, false, e
	}
	if t.Wait <= 0 {
		return t.At, false, nil
	}
	timer := time.NewTimer(t.Wait)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		b.store.Refund(context.WithoutCancel(ctx), t)
		return 0, false, ctx.Err()
	}
	b.mu.Lock()
	pausedSince := b.pause.until > pauseSeen && b.pause.until > b.now()
	b.mu.Unlock()
	if pausedSince {
		b.store.Refund(context.WithoutCancel(ctx), t)
		return 0, true, nil
	}
	if t.Paused {
		reason = Paused
	}
	b.emit(Event{Reason: reason, Wait: t.Wait})
	return t.At, false, nil
}

func (b *Budget) storePace() Pace {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Pace{Interval: b.rate.Interval(), Burst: int(b.burst), Adaptive: b.adaptive}
}

// reportToStore is apply for a budget whose state is in a Store.
func (b *Budget) reportToStore(status int, f Feedback, sent int64) {
	pace := b.storePace()
	r := Report{Status: status, Pause: f.Pause, Allow: int(pauseAllowance(f, int64(pace.Burst))),
		Refused: refused(status, f), Sent: sent, Pace: pace}
	st, err := b.store.Report(context.Background(), r)
	b.storeHealth(cmpErr(err, st.Fallback))
	if err == nil && st.Pause > 0 {
		// Calls of this budget already waiting for a turn the store gave
		// before the pause take a turn again behind it.
		b.mu.Lock()
		b.pause.extend(b.now()+int64(st.Pause), st.PauseStatus)
		b.mu.Unlock()
	}
	if f.Pause > 0 {
		b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
	}
	if err != nil {
		return
	}
	b.mu.Lock()
	old := b.ctl.factor
	b.ctl.factor = st.Factor
	b.mu.Unlock()
	if st.Factor < old || (st.Factor == 1 && old < 1) {
		rate := r.Pace.Interval.Seconds()
		b.emit(Event{Reason: RateChanged, Status: status, OldRate: old / rate, NewRate: st.Factor / rate})
	}
}

// storeHealth reports the store going down (err non-nil) and coming back,
// once per change.
func (b *Budget) storeHealth(err error) {
	if err != nil {
		if b.storeDown.CompareAndSwap(false, true) {
			b.emit(Event{Reason: StoreFailure, Err: err})
		}
		return
	}
	if b.storeDown.CompareAndSwap(true, false) {
		b.emit(Event{Reason: StoreRecovered})
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
