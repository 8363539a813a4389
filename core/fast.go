package core

import "sync/atomic"

// The fast lane: an admission without the lock, for the common case.
//
// While nobody waits, nothing is paused or held, no probe is armed and the
// pace is the configured one, a call whose turn has come needs nothing of
// the scheduler but one GCRA step: spend, on the state's tat, at now. The
// fast lane takes that step with one compare-and-swap (as uber's atomic
// limiter does), so such calls never touch mu.
//
// How the lane and the locked path share the GCRA state:
//
//   - The lane is open when lane.tat holds the state's tat, closed when it
//     holds closedLane. While it is open, lane.tat is the truth and b.g.tat
//     is stale; while it is closed, b.g.tat is the truth.
//   - Only the locked path opens it (openLaneLocked, under mu, and only
//     when the conditions above hold at now: an empty queue above all) and
//     closes it: every holder of mu takes it with lock, which swaps
//     closedLane in and carries the tat the lane moved into b.g. So under
//     mu the lane is always closed, and a caller queued, a pause, a probe
//     or a new pace all begin with the lane closed: a call that finds it
//     closed takes the locked path, behind the queue, in arrival order.
//   - The lane's step is the GCRA arithmetic of gcra.go (earliestOf,
//     spend) on the pace the lane was opened at, which is immutable in a
//     laneState: a new pace gets a new laneState, so a call that read the
//     old one can only fail its swap (the old one stays closed).
//
// A call the lane cannot admit at now (its turn has not come, or its
// deadline is now) falls back to the locked path, which decides exactly.
// The bound on send times holds across the switch: every admission, by
// either path, is one GCRA step from the tat the other left.

// closedLane is lane.tat while the lane is closed: no tat is ever this
// low (idle is math.MinInt64/2).
const closedLane = -1 << 63

// laneState is the fast lane at one pace. It is allocated when the budget
// is built and again only when the configured pace changes.
type laneState struct {
	_        [64]byte // (tat is written by every admitting goroutine: a cache line of its own)
	tat      atomic.Int64
	interval int64 // read-only
	burst    int64 // read-only
	tau      int64 // read-only: (burst-1)·interval, so a call may go at tat − tau (earliestOf)
	_        [32]byte
}

// lock takes mu and closes the fast lane, carrying the tat it moved into
// b.g and b.told (the lane opened with them the same: told.go). Every
// holder of the budget's mu takes it this way.
func (b *Budget) lock() {
	b.mu.Lock()
	if l := b.lane.Load(); l != nil && l.tat.Load() != closedLane {
		if t := l.tat.Swap(closedLane); t != closedLane {
			b.g.tat, b.told.tat = t, t
		}
	}
}

// openLaneLocked opens the fast lane at now if nothing but the GCRA step
// stands between a call and its turn: nobody queued, no gate (pause or
// hold), no armed probe nor a window's allowance being counted
// (control_window.go), the pace the configured one (no adaptive cut, no
// quota report slowing it), and b.g at that pace and the same state as
// the record of the turns granted (b.told: told.go), so that the lane's
// turns are both's. A budget built without a lane (a cap, extra
// dimensions, a store) never opens one.
func (b *Budget) openLaneLocked(now int64) {
	l := b.lane.Load()
	if l == nil || b.queue.n > 0 || b.gateLocked() > now || b.ctl.pol.probe.armed || b.ctl.pol.win.left > 0 {
		return
	}
	if interval, burst := b.paceLocked(now); interval != int64(b.rate.Interval()) || burst != b.burst ||
		b.g.interval != interval || b.g.burst != burst {
		return // slowed, or b.g not yet at the pace
	}
	if !b.toldMatchesLocked(now) {
		return // b.g holds back more than was sent (a pause's floor, a report): its bound is its own
	}
	if l.interval != b.g.interval || l.burst != b.g.burst {
		l = newLane(b.g.interval, b.g.burst) // the pace changed (SetRate, a learned rate)
		b.lane.Store(l)
	}
	l.tat.Store(b.g.tat)
}

// newLane returns a closed lane at interval and burst.
func newLane(interval, burst int64) *laneState {
	l := &laneState{interval: interval, burst: burst, tau: (burst - 1) * interval}
	l.tat.Store(closedLane)
	return l
}

// admitFast admits a call arriving at now through the fast lane, if the
// lane is open and the call's turn has come, and reports whether it did.
func (b *Budget) admitFast(now, deadline int64) bool {
	l := b.lane.Load()
	if l == nil || now >= deadline {
		return false
	}
	for {
		tat := l.tat.Load()
		if tat == closedLane || tat-l.tau > now { // tat − tau: earliestOf(tat, 1, burst, interval)
			return false // closed, or the call must wait: the locked path queues it
		}
		if l.tat.CompareAndSwap(tat, spend(tat, now, 1, l.interval)) {
			return true
		}
	}
}
