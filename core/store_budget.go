package core

import (
	"context"
	"math"
	"sync/atomic"
	"time"

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
	// queue (gcra.setPace); changed is closed (and replaced) when the
	// factor changes, to wake them. Guarded by the budget's lock.
	prog    float64
	progAt  int64
	changed chan struct{}
	woke    float64 // the factor the waiting calls were last woken at (mirror)
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
		e := &RateLimitError{RetryAfter: t.Wait, Reason: reason, Budget: b.name}
		if t.Paused {
			e.Reason, e.StatusCode = Paused, t.Status
		}
		return 0, false, e
	}
	p.skew.Store(t.At - int64(t.Wait) - time.Now().UnixNano()) // the store's now, less ours
	p.skewKnown.Store(true)
	if t.Wait <= 0 {
		p.keep(r, t)
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
		f := b.ctl.pol.factor
		var late error
		if at := now + int64(left/f); left >= 1 && at >= deadline {
			// Stretched to or past the deadline: it fails at once, as a
			// call in memory re-timed past its deadline does.
			e := &RateLimitError{RetryAfter: time.Duration(at - now), Reason: Paced, Budget: b.name}
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
	b.emit(Event{Reason: reason, Wait: t.Wait})
	return t.At, false, nil
}

// mirror takes the store's shared factor f, under the budget's lock, and
// wakes the waiting calls when it fell (a cut may stretch a wait past its
// deadline: it fails at once) or rose by wakeStep since they were last
// woken, or back to 1. CUBIC raises the factor a hair at almost every
// success: woken at each, every waiting call took the lock twice per
// response. A call not woken for a smaller rise goes when its timer
// fires, at most that much later than the risen pace allows.
func (p *storePacer) mirror(f float64) {
	b := p.b
	f = sharedFactor(f)
	if f == b.ctl.pol.factor {
		return
	}
	now := b.now()
	p.prog, p.progAt = p.progress(now), now
	b.ctl.pol.factor = f
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
	return p.prog + float64(now-p.progAt)*p.b.ctl.pol.factor
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
	return Pace{Interval: b.rate.Interval(), Burst: int(b.burst), Adaptive: b.ctl.pol.cfg, Dims: p.dims}
}

// feedback is apply for a budget whose state is in a Store. The budget's
// own controller (control.go) reads the response, by the same evidence as
// a budget in memory; the store shares its verdict with the fleet:
//   - the server's pause, and what may go at once when it ends;
//   - the controller's hold until its probe's turn (fleetWait);
//   - a cut, only when the controller finds the pace above the server's
//     (a refusal that only says "pause", a near miss or a windowed
//     server's spent window cuts no more than a budget's own);
//   - the quota report, to shape the shared pace, unless the quota is
//     windowed (spent, then waited for: not spread).
//
// The shared factor stays the store's: a cut carries the factor and the
// plateau the controller decided, which the store takes once per burst
// across the fleet, and recovers along the same CUBIC curve
// (fleetFactor).
func (p *storePacer) feedback(status int, f ratelimit.Feedback, sent, _ int64, _ uint64) {
	b := p.b
	pace := p.pace()
	// The controller runs on the wall clock (sent is on the store's, which
	// the skew maps back); before any turn, a send is "just now".
	now, at := time.Now().UnixNano(), sent-p.skew.Load()
	justNow := sent == math.MaxInt64
	if justNow {
		at = now
	}
	b.lock()
	// One burst counts once by the store's rule, across the fleet (a
	// request sent before its last decrease does not decrease it again),
	// not by this budget's cuts alone.
	b.ctl.pol.cutAt = math.MinInt64
	old, plateau := b.ctl.pol.factor, b.ctl.pol.failed            // the store's factor, as last mirrored
	answer := b.ctl.pol.probe.out && at >= b.ctl.pol.probe.sentAt // the probe's answer
	v := b.ctl.pol.observe(observation{status: status, f: f, sent: at, now: now,
		interval: int64(pace.Interval), burst: int64(pace.Burst), justNow: justNow})
	decided := b.ctl.pol.factor
	// The shared factor is the store's: v.cut reports the controller's cut,
	// to decided, careful near its plateau (failed), which it keeps only
	// if the store takes the cut.
	b.ctl.pol.factor = old
	until, allow := fleetWait(&b.ctl.pol, v, isRefusal(status, f), answer, f.Pause, now)
	windowed := b.ctl.pol.model == modelWindowed || v.whole
	r := Report{Status: status, Allow: int(allow), Refused: v.cut, Sent: sent, Pace: pace}
	if v.cut {
		r.Factor, r.Plateau = decided, b.ctl.pol.failed
		b.ctl.pol.failed = plateau
	}
	b.unlock()
	if until > now {
		r.Pause = time.Duration(until - now)
	}
	if !windowed {
		r.Remaining, r.Limit, r.Reset = f.Remaining, f.Limit, min(f.Reset, b.maxPause)
	}
	for _, q := range f.Quotas { // a Quota whose Name, or else Unit, is a dimension's
		for _, d := range p.dims {
			if q.Name == d.Name || (q.Unit == d.Name && !p.hasDim(q.Name)) {
				r.Quotas = append(r.Quotas, DimQuota{Name: d.Name, Remaining: q.Remaining, Limit: q.Limit, Reset: min(q.Reset, b.maxPause)})
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
	if f.Pause > 0 && (until > now || isRefusal(status, f)) {
		b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
	}
	if err != nil {
		return
	}
	b.lock()
	old = b.ctl.pol.factor
	p.mirror(st.Factor)
	if v.cut && st.Factor == r.Factor {
		b.ctl.pol.failed = r.Plateau // the store took the cut
	}
	b.unlock()
	if st.Factor < old || (st.Factor == 1 && old < 1) {
		rate := r.Pace.Interval.Seconds()
		b.emit(Event{Reason: RateChanged, Status: status, OldRate: old / rate, NewRate: st.Factor / rate})
	}
}

// fleetWait is the instant until which a verdict makes every budget on the
// store wait, and how many may go at once then. A budget in memory holds
// its callers while one probe finds out whether a wait is real; a Store
// knows no probe and cannot hold the other budgets between probes, so:
//   - a server's pause is shared as it is;
//   - a windowed quota's spent window is waited for until its turn, when
//     one request goes and the shared pace follows;
//   - a refusal with a coarse wait (a whole second), not the
//     probe's answer, holds the fleet until the probe the controller
//     armed (as a budget holds its callers), and one goes then: told
//     twice the rate, a fleet that waited each such refusal in full lost
//     a second per wave (2.5× the ideal);
//   - any other refusal's wait is honoured in full — the probe's refusal
//     among them: its own, or the controller's bound if later (nothing
//     goes into a wait a probe showed real);
//   - a success's hold (the quota spent, its model not known) is not
//     shared: the pace goes on, as on a server that refills continuously.
//
// The controller's probe is out from then: the first request this budget
// sends at or after it answers as the probe.
func fleetWait(c *control, v verdict, refusal, answer bool, wait time.Duration, now int64) (until, allow int64) {
	until, allow = v.pause, v.allow
	switch {
	case c.model == modelWindowed && v.probeAt > until:
		until, allow = v.probeAt, 1
	case refusal && !answer && int64(wait) == coarse && (v.probeAt > now || c.probe.armed || c.probe.out):
		// A coarse wait (a whole second, maybe rounded up from a few ms;
		// an exact wait, as a Retry-After in ms, says when and is
		// honoured) that no probe answered yet: the probe the controller
		// armed goes at its turn, as a budget's own does, and the shared
		// pace follows; the rest of the wave waits for that probe's
		// answer. The probe refused, its own wait is honoured in full.
		if v.probeAt > until {
			until, allow = v.probeAt, 1
		}
	case refusal:
		// (The refusal's own wait at the least: it may answer an earlier
		// probe, whose hold ends sooner. A probe planned when the wait
		// ends goes then, and the shared pace follows it: the hold after
		// it is a budget's own, until the probe's answer.)
		w := max(v.holdUntil, now+int64(wait))
		if v.probeAt >= now+int64(wait) {
			w = max(v.pause, v.probeAt)
		}
		if w > until {
			until, allow = w, 1
		}
	}
	if v.probeAt > 0 {
		c.probe.armed, c.probe.out, c.probe.sentAt = false, true, max(until, v.probeAt, now)
	}
	if until <= now {
		return 0, 0
	}
	return until, allow
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
	e := &RateLimitError{RetryAfter: t.Wait, Reason: Paced, Budget: b.name}
	switch {
	case t.Paused:
		e.Reason, e.StatusCode = Paused, t.Status
	case t.Factor < 1:
		e.Reason = Throttled
	}
	return e
}

func (p *storePacer) pauseLeft() time.Duration {
	st, err := p.s.Status(context.Background())
	if err != nil {
		return 0
	}
	return st.Pause
}
