package core

import (
	"context"
	"math"
	"sync/atomic"
	"time"
)

// storePacer is the store-backed mode (WithStore): turns come from the
// Store and feedback goes to it. The budget's own pause and adaptive
// factor only mirror the store's, for its waiting calls and its events.
type storePacer struct {
	b    *Budget
	s    Store
	down atomic.Bool // the store failed and has not answered since
}

// turn is Acquire's turn when the state is in a Store: one call to Take,
// then a wait for the turn; a cancelled wait refunds the turn. A budget on
// a store has no extra dimensions: r is always nil.
func (p *storePacer) turn(ctx context.Context, now, deadline int64, _ *reservation) (int64, error) {
	for {
		at, retake, err := p.takeOnce(ctx, now, deadline)
		if !retake {
			return at, err
		}
		now = p.b.now()
	}
}

// takeFromStoreOnce takes one turn from the store and waits for it. If a
// pause this budget heard of began while it waited, the turn is given back
// and retake is true: the call takes a turn again, behind the pause.
func (p *storePacer) takeOnce(ctx context.Context, now, deadline int64) (at int64, retake bool, err error) {
	b := p.b
	maxWait := time.Duration(-1)
	if deadline != never {
		maxWait = time.Duration(deadline - now)
	}
	t, err := p.s.Take(ctx, b.storePace(), maxWait)
	if ctx.Err() == nil {
		p.health(cmpErr(err, t.Fallback))
	}
	if err != nil {
		return 0, false, err
	}
	b.mu.Lock()
	b.ctl.pol.factor = t.Factor // mirror the store's shared factor
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
		p.s.Refund(context.WithoutCancel(ctx), t)
		return 0, false, ctx.Err()
	}
	b.mu.Lock()
	pausedSince := b.pause.until > pauseSeen && b.pause.until > b.now()
	b.mu.Unlock()
	if pausedSince {
		p.s.Refund(context.WithoutCancel(ctx), t)
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
	return Pace{Interval: b.rate.Interval(), Burst: int(b.burst), Adaptive: b.ctl.pol.cfg}
}

// feedback is apply for a budget whose state is in a Store.
func (p *storePacer) feedback(status int, f Feedback, sent, _ int64, _ bool) {
	b := p.b
	pace := b.storePace()
	r := Report{Status: status, Pause: f.Pause, Allow: int(pauseAllowance(f, int64(pace.Burst))),
		Refused: refused(status, f), Sent: sent, Pace: pace}
	st, err := p.s.Report(context.Background(), r)
	p.health(cmpErr(err, st.Fallback))
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
	old := b.ctl.pol.factor
	b.ctl.pol.factor = st.Factor
	b.mu.Unlock()
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

// stamp for a store: a wall time cannot be placed on the store's clock, so
// it counts as sent after any decrease.
func (p *storePacer) stamp(time.Time) int64 { return math.MaxInt64 }

func (p *storePacer) check(ctx context.Context, now, deadline int64) error {
	st, err := p.s.Status(ctx)
	if err != nil || now+int64(st.Pause) < deadline {
		return nil
	}
	return &RateLimitError{RetryAfter: st.Pause, StatusCode: st.PauseStatus, Reason: Paused, Budget: p.b.name}
}

func (p *storePacer) pauseLeft() time.Duration {
	st, err := p.s.Status(context.Background())
	if err != nil {
		return 0
	}
	return st.Pause
}
