package core

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/headgate-go/headgate/core/internal/quota"
	"github.com/headgate-go/headgate/core/ratelimit"
)

// storePacer is the store-backed mode (WithStore): turns come from the
// Store and feedback goes to it. The budget's own pause and adaptive
// factor only mirror the store's, for its waiting calls and its events.
type storePacer struct {
	b    *Budget
	s    Store
	down atomic.Bool // the store failed and has not answered since
	// skew is the store's clock minus the Unix wall clock (ns), as the
	// last granted turn measured it, for stamp; skewKnown says a turn did.
	skew      atomic.Int64
	skewKnown atomic.Bool
	dims      []DimPace // the extra dimensions' configured pace; read-only after NewBudget
	// The fleet's progress through its queue of turns: prog at progAt
	// (b.now), advancing at the shared factor as this budget last saw it
	// — so a call waits for the progress its turn was due at, and a change
	// of the factor re-times every waiting call as the store re-timed its
	// queue (gcra.State.SetPace); changed is closed (and replaced) when the
	// factor changes, to wake them. Guarded by the budget's lock.
	prog    float64
	progAt  int64
	changed chan struct{}
	woke    float64 // the factor the waiting calls were last woken at (mirror)
	factor  float64 // the fleet's factor, as the store last reported it
}

// newStorePacer is b's mode on store s, with the extra dimensions dims
// configured.
func newStorePacer(b *Budget, s Store, dims []dimConfig) *storePacer {
	p := &storePacer{b: b, s: s, factor: 1}
	for _, d := range dims {
		p.dims = append(p.dims, DimPace{Name: d.name, Interval: d.rate.Interval(), Burst: d.burst})
	}
	return p
}

// turn is Acquire's turn when the state is in a Store: one call to Take
// (with r's costs in the extra dimensions, when r is not nil), then a wait
// for the turn; a cancelled wait refunds the turn.
func (p *storePacer) turn(ctx context.Context, now, deadline int64, r *reservation, _ uint64) (int64, error) {
	for {
		at, retake, err := p.takeOnce(ctx, now, deadline, r)
		if !retake {
			return at, err
		}
		now = p.b.now()
	}
}

// takeOnce takes one turn from the store and waits for it. If a pause this
// budget heard of began while it waited, the turn is given back and retake
// is true: the call takes a turn again, behind the pause. A granted turn
// with costs is kept in r, for Settle.
func (p *storePacer) takeOnce(ctx context.Context, now, deadline int64, r *reservation) (at int64, retake bool, err error) {
	b := p.b
	maxWait := time.Duration(-1)
	if deadline != never {
		maxWait = time.Duration(deadline - now)
	}
	pace := p.pace()
	if r != nil {
		pace.Cost = r.n
	}
	t, err := p.s.Take(ctx, pace, maxWait)
	if ctx.Err() == nil {
		p.health(cmpErr(err, t.Fallback))
	}
	if err != nil {
		return 0, false, err
	}
	b.lock()
	p.mirror(t.Factor)
	pauseSeen := b.pause.until
	took := b.now()
	b.unlock()
	reason := Paced
	if t.Factor < 1 {
		reason = Throttled
	}
	if !t.Granted {
		e := &RateLimitError{RetryAfter: t.Wait, Reason: reason, Budget: b.cfg.name}
		if t.Paused {
			e.Reason, e.StatusCode = Paused, t.Status
		}
		return 0, false, e
	}
	p.skew.Store(t.At - int64(t.Wait) - time.Now().UnixNano()) // the store's now, less ours
	p.skewKnown.Store(true)
	if t.Wait <= 0 {
		p.keep(r, t)
		p.sent()
		return t.At, false, nil
	}
	// The call waits until the fleet's progress reaches its turn's: a cut
	// the budget sees while it waits stretches what is left of its wait, a
	// recovery shortens it, as the store re-times its queue — the call
	// keeps its place in the fleet's order, at the pace of the moment.
	// (Taken again after a cut instead, each waiting call left its turn
	// reserved and unsent and took one behind the whole queue: a fleet
	// sent nothing for up to a second after each cut.)
	b.lock()
	due := p.progress(took) + float64(t.Wait)*sharedFactor(t.Factor)
	b.unlock()
	timer := time.NewTimer(t.Wait)
	defer timer.Stop()
	for {
		b.lock()
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		b.unlock()
		select {
		case <-timer.C:
		case <-changed:
		case <-ctx.Done():
			p.s.Refund(context.WithoutCancel(ctx), t)
			return 0, false, ctx.Err()
		}
		b.lock()
		now := b.now()
		pausedSince := b.pause.until > pauseSeen && b.pause.until > now
		left := due - p.progress(now)
		f := p.factor
		var late error
		if at := now + int64(left/f); left >= 1 && at >= deadline {
			// Stretched to or past the deadline: it fails at once, as a
			// call in memory re-timed past its deadline does.
			e := &RateLimitError{RetryAfter: time.Duration(at - now), Reason: Paced, Budget: b.cfg.name}
			if f < 1 {
				e.Reason = Throttled
			}
			late = e
		}
		b.unlock()
		if late != nil {
			p.s.Refund(context.WithoutCancel(ctx), t)
			return 0, false, late
		}
		if left >= 1 {
			timer.Stop()
			timer.Reset(time.Duration(left / f))
			continue
		}
		if pausedSince { // due inside a pause heard of since: behind it
			p.s.Refund(context.WithoutCancel(ctx), t)
			return 0, true, nil
		}
		break
	}
	if t.Paused {
		reason = Paused
	}
	p.keep(r, t)
	p.sent()
	b.emit(Event{Reason: reason, Wait: t.Wait})
	return t.At, false, nil
}

// sent counts a turn the store granted in the budget's estimate, on the
// wall clock it reads responses on.
func (p *storePacer) sent() {
	p.b.lock()
	p.b.model.Sent(time.Now().UnixNano(), 1)
	p.b.unlock()
}

// mirror takes the store's shared factor f, under the budget's lock, and
// wakes the waiting calls when it fell (a cut may stretch a wait past its
// deadline: it fails at once) or rose by wakeStep since they were last
// woken, or back to 1. CUBIC raises the factor slightly at almost every
// success: woken at each, every waiting call took the lock twice per
// response. A call not woken for a smaller rise goes when its timer
// fires, at most that much later than the risen pace allows.
func (p *storePacer) mirror(f float64) {
	b := p.b
	f = sharedFactor(f)
	if f == p.factor {
		return
	}
	now := b.now()
	p.prog, p.progAt = p.progress(now), now
	p.factor = f
	if f > p.woke && f < 1 && f < p.woke*(1+wakeStep) {
		return
	}
	p.woke = f
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// wakeStep is the rise of the shared factor, as a fraction of the factor
// at the last wake, that wakes the calls waiting for their store turn.
const wakeStep = 1.0 / 32

// sharedFactor is a store's factor f, or 1 when f is outside (0, 1] (a
// Store that does not keep one): a call never goes before its turn, nor
// waits forever, for a factor no store should report.
func sharedFactor(f float64) float64 {
	if f > 0 && f <= 1 {
		return f
	}
	return 1
}

// progress is the fleet's progress at now (b.now, not before the last
// change), under the budget's lock.
func (p *storePacer) progress(now int64) float64 {
	return p.prog + float64(now-p.progAt)*p.factor
}

// hasDim reports whether the budget has an extra dimension named name.
func (p *storePacer) hasDim(name string) bool {
	for _, d := range p.dims {
		if d.Name == name {
			return true
		}
	}
	return false
}

// keep records a granted turn in its reservation, for settle.
func (p *storePacer) keep(r *reservation, t Turn) {
	if r != nil {
		r.storeTurn, r.granted, r.sendAt = t, true, t.At
	}
}

// settle settles r's costs through the store at actual units (nil: none,
// giving the estimate back), once.
func (p *storePacer) settle(r *reservation, actual []int64) {
	b := p.b
	b.lock()
	done := r.settled || !r.granted
	r.settled = true
	b.unlock()
	if done {
		return
	}
	if actual == nil {
		actual = make([]int64, len(r.n))
	}
	p.health(p.s.Settle(context.Background(), r.storeTurn, actual))
}

func (p *storePacer) pace() Pace {
	b := p.b
	b.lock()
	defer b.unlock()
	return Pace{Interval: b.pace.rate.Interval(), Burst: int(b.pace.burst), Adaptive: b.cfg.adaptive, Dims: p.dims}
}

// feedback is apply for a budget whose state is in a Store. The budget's
// own estimate (internal/quota, on the wall clock) reads the response by
// the same evidence as a budget in memory; the store shares with the
// fleet:
//   - the server's pause, and on a refusal the wait the estimate sets (a
//     spent window until it turns): a store cannot hold the other budgets
//     while one guesses, so the fleet waits what this budget would wait —
//     but never for answers to come (the fleet's calls bring them): then
//     until the most favourable reading places a token (Model.Earliest);
//   - a cut, when the estimate cuts the pace of a server that reports no
//     quota, with the factor and plateau it decided, which the store takes
//     once per burst across the fleet and recovers along the same CUBIC
//     curve (internal/fleet);
//   - the quota report, to shape the shared pace, unless the quota is
//     windowed (spent, then waited for: not spread).
func (p *storePacer) feedback(status int, f ratelimit.Feedback, sent, _ int64, wall time.Time, _ uint64) {
	b := p.b
	pace := p.pace()
	// The estimate runs on the wall clock (sent is on the store's, which
	// the skew maps back); before any turn, a send is "just now".
	now, at := time.Now().UnixNano(), sent-p.skew.Load()
	if sent == math.MaxInt64 {
		at = never
	}
	refusal := isRefusal(status, f)
	if !refusal && status >= 500 {
		return
	}
	b.lock()
	b.model.SetFactor(p.factor) // (a cut is decided from the fleet's pace, as this budget last saw it)
	e := b.model.Observe(reportOf(status, f, at, now, wall))
	until := e.Pause
	if refusal {
		at := b.waitUntilLocked(now)
		if at >= b.quietLocked(now)+int64(b.MaxPause()) {
			at = max(b.model.Earliest(now), b.pause.until)
		}
		until = max(until, at)
	}
	windowed := b.model.Kind() == quota.Windows
	r := Report{Status: status, Refused: e.Cut, Sent: sent, Pace: pace}
	if e.Cut {
		r.Factor, r.Plateau = b.model.Factor(), b.model.Plateau()
	}
	b.model.SetFactor(p.factor) // the shared factor stays the store's
	b.unlock()
	if until > now {
		r.Pause = time.Duration(until - now)
	}
	if !windowed {
		r.Remaining, r.Limit, r.Reset = f.Remaining, f.Limit, min(f.Reset, b.cfg.maxPause)
	}
	for _, q := range f.Quotas { // a Quota whose Name, or else Unit, is a dimension's
		for _, d := range p.dims {
			if q.Name == d.Name || (q.Unit == d.Name && !p.hasDim(q.Name)) {
				r.Quotas = append(r.Quotas, DimQuota{Name: d.Name, Remaining: q.Remaining, Limit: q.Limit, Reset: min(q.Reset, b.cfg.maxPause)})
				break
			}
		}
	}
	st, err := p.s.Report(context.Background(), r)
	p.health(cmpErr(err, st.Fallback))
	if err == nil && st.Pause > 0 {
		// Calls of this budget already waiting for a turn the store gave
		// before the pause take a turn again behind it.
		b.lock()
		b.pause.extend(b.now()+int64(st.Pause), st.PauseStatus)
		b.unlock()
	}
	if f.Pause > 0 && (until > now || refusal) {
		b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
	}
	if err != nil {
		return
	}
	b.lock()
	old := p.factor
	p.mirror(st.Factor)
	b.model.SetFactor(p.factor)
	b.unlock()
	if st.Factor < old || (st.Factor == 1 && old < 1) {
		rate := r.Pace.Interval.Seconds()
		b.emit(Event{Reason: RateChanged, Status: status, OldRate: old / rate, NewRate: st.Factor / rate})
	}
}

// health reports the store going down (err non-nil) and coming back,
// once per change.
func (p *storePacer) health(err error) {
	if err != nil {
		if p.down.CompareAndSwap(false, true) {
			p.b.emit(Event{Reason: StoreFailure, Err: err})
		}
		return
	}
	if p.down.CompareAndSwap(true, false) {
		p.b.emit(Event{Reason: StoreRecovered})
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// stamp for a store places sent on the store's clock by the skew the last
// granted turn measured (off by at most that call's round trip). Before
// this budget took a turn, and for the zero time, it counts as sent after
// any decrease: "just now".
func (p *storePacer) stamp(sent time.Time) int64 {
	if sent.IsZero() || !p.skewKnown.Load() {
		return math.MaxInt64
	}
	return sent.UnixNano() + p.skew.Load()
}

// check asks the store when the next turn would come (a Take that may wait
// for nothing, so it reserves nothing): behind the shared pause and at the
// shared pace. A store that does not answer leaves the answer to Acquire.
func (p *storePacer) check(ctx context.Context, now, deadline int64) error {
	b := p.b
	t, err := p.s.Take(ctx, p.pace(), 0)
	if err != nil || t.Granted || now+int64(t.Wait) < deadline {
		if t.Granted { // a store that grants at maxWait 0 broke the contract: give it back
			p.s.Refund(context.WithoutCancel(ctx), t)
		}
		return nil
	}
	e := &RateLimitError{RetryAfter: t.Wait, Reason: Paced, Budget: b.cfg.name}
	switch {
	case t.Paused:
		e.Reason, e.StatusCode = Paused, t.Status
	case t.Factor < 1:
		e.Reason = Throttled
	}
	return e
}

// factorLocked is the fleet's factor, as the store last reported it.
func (p *storePacer) factorLocked() float64 { return p.factor }

func (*storePacer) scheduled() bool { return false }

func (p *storePacer) pauseLeft() time.Duration {
	st, err := p.s.Status(context.Background())
	if err != nil {
		return 0
	}
	return st.Pause
}
