package core

import (
	"context"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// A pacer is a budget's mode: where its calls get their turns and where its
// feedback goes. A budget has one for its life, chosen by its constructor:
//
//	memPacer    NewBudget: the in-memory GCRA state and the scheduler (scheduler.go)
//	storePacer  NewBudget with WithStore: the state in a Store (store_budget.go)
//	nil         Disabled and the zero Budget: every call goes at once
//
// The budget's entry points deal with the context, the slot and the
// permit, and leave the rest to the pacer.
type pacer interface {
	// turn reserves the call's turn (with r's cost in the extra
	// dimensions, when r is not nil) and waits for it; it returns the
	// instant the turn was given, on the pacer's clock, or a
	// *RateLimitError when the turn would come at or after deadline. key
	// names the request, to find a place reserved for it (place.go); 0: none.
	turn(ctx context.Context, now, deadline int64, r *reservation, key uint64) (int64, error)
	// check is Check's answer at now against deadline; it takes nothing.
	check(ctx context.Context, now, deadline int64) error
	// feedback applies one response's feedback; sent is the request's
	// send time as turn returned it (or stamp made it); retry is the key
	// of a request its caller may retry (0: none, keep no place for it).
	feedback(status int, f ratelimit.Feedback, sent, now int64, wall time.Time, retry uint64)
	// stamp places a send time given as a time.Time (the zero time: just
	// now) on the pacer's clock, for Budget.Observe.
	stamp(sent time.Time) int64
	// pauseLeft is how long until a call may go: the server's pause, or the
	// wait the estimate of its quota sets (PauseRemaining).
	pauseLeft() time.Duration
	// settle settles a granted reservation's costs at actual units per
	// extra dimension (nil: none, giving the estimate back), once.
	settle(r *reservation, actual []int64)
	// factorLocked is the factor, in (0, 1], by which the pace is slowed
	// now (EffectiveRate); the budget's mu is held.
	factorLocked() float64
	// scheduled reports whether the turns come from the budget's own
	// scheduler, under its mu (memPacer): the entry points then take the
	// turn, a capped call's slot with it, and the wire's last look from
	// the scheduler directly.
	scheduled() bool
}

// memPacer is the in-memory mode: the budget's own GCRA state, queue and
// feedback controller, under its mu.
type memPacer struct{ b *Budget }

func (p memPacer) turn(ctx context.Context, now, deadline int64, r *reservation, key uint64) (int64, error) {
	sent, w, err := p.b.takeTurn(now, deadline, r, key)
	if w != nil {
		return p.b.wait(ctx, w)
	}
	return sent, err
}

func (p memPacer) check(_ context.Context, now, deadline int64) error {
	b := p.b
	b.lock()
	defer b.unlock()
	b.syncPaceLocked(now)
	if _, known := b.planLocked(now, b.lastSendAtLocked(), nil, int64(b.queue.N)+1, b.baseLocked()); known >= deadline { // plans, takes nothing
		return b.lateErrorLocked(known, now) // (the certain wait, as a call's own error says: reserveLocked)
	}
	b.openLaneLocked(now) // (fast.go)
	return nil
}

func (p memPacer) feedback(status int, f ratelimit.Feedback, sent, now int64, wall time.Time, retry uint64) {
	p.b.apply(status, f, sent, now, wall, retry)
}

func (p memPacer) stamp(sent time.Time) int64 {
	if sent.IsZero() {
		return never // "just now": after any cut (observe.go)
	}
	return int64(sent.Sub(p.b.cfg.epoch))
}

func (p memPacer) settle(r *reservation, actual []int64) {
	now := p.b.now()
	p.b.lock()
	p.b.settleLocked(r, actual, now)
	p.b.unlock()
}

// factorLocked is the adaptive factor, or the rate the server's reports
// show when that is slower.
func (p memPacer) factorLocked() float64 {
	b := p.b
	f := b.model.Factor()
	if r, ok := b.model.Rate(); ok && r < b.pace.rate.PerSecondFloat()*f {
		f = r / b.pace.rate.PerSecondFloat()
	}
	return f
}

func (memPacer) scheduled() bool { return true }

func (p memPacer) pauseLeft() time.Duration {
	now := p.b.now()
	p.b.lock()
	defer p.b.unlock()
	_, known := p.b.model.Next(now, 1, p.b.quietLocked(now))
	return time.Duration(max(0, known-now, p.b.pause.until-now))
}
