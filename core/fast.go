package core

import (
	"sync/atomic"

	"github.com/headgate-go/headgate/core/internal/gcra"
)

// The fast lane: an admission without the lock, for the common case.
//
// While nobody waits, nothing is paused and the estimate of the server's
// quota lets calls go at once, a call whose turn has come needs nothing of
// the scheduler but one GCRA step: spend, on the state's tat, at now. The
// fast lane takes that step with one compare-and-swap (as uber's atomic
// limiter does), so such calls never touch mu.
//
// How the lane and the locked path share the GCRA state:
//
//   - The lane is open when lane.tat holds the state's tat, closed when it
//     holds closedLane. While it is open, lane.tat is the truth and b.g.tat
//     is stale; while it is closed, b.g.tat is the truth. The calls it
//     admits are counted (lane.granted) and reach the estimate when it
//     closes: every call granted, on either path, is counted.
//   - Only the locked path opens it (openLaneLocked, under mu, and only
//     when the conditions above hold at now: an empty queue above all) and
//     closes it: every holder of mu takes it with lock, which swaps
//     closedLane in and carries the tat the lane moved into b.g. So under
//     mu the lane is always closed, and a caller queued, a pause, a guess
//     or a new pace all begin with the lane closed: a call that finds it
//     closed takes the locked path, behind the queue, in arrival order.
//   - The lane's step is the GCRA arithmetic of internal/gcra (EarliestOf,
//     Spend) on the pace the lane was opened at, which is immutable in a
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
	granted  atomic.Int64 // calls the lane admitted since it opened
	last     atomic.Int64 // when the last of them was admitted
	allow    atomic.Int64 // how many it may admit before it closes by itself; set while closed
	interval int64        // read-only
	burst    int64        // read-only
	tau      int64        // read-only: (burst-1)·interval, so a call may go at tat − tau (gcra.EarliestOf)
	_        [8]byte
}

// openLaneLocked opens the fast lane at now if nothing but the GCRA step
// stands between a call and its turn: nobody queued, no pause, and the
// estimate of the server's quota lets at least one call go now (internal/
// quota). The lane then admits as many as the estimate lets go at once,
// at most, before it closes by itself: a call past them takes the locked
// path, which asks the estimate again. A budget built without a lane (a
// cap, extra dimensions, a store) never opens one.
func (b *Budget) openLaneLocked(now int64) {
	l := b.lane.Load()
	if l == nil || b.queue.N > 0 || b.pause.until > now {
		return
	}
	if l.interval != b.g.Interval || l.burst != b.g.Burst {
		l = newLane(b.g.Interval, b.g.Burst) // the pace changed (SetRate)
		b.lane.Store(l)
	}
	allow := b.model.Ready(now, maxLaneAllow)
	if allow == 0 {
		return
	}
	l.allow.Store(allow) // (atomic: a call that read the tat before the lane closed may still read it)
	l.granted.Store(0)
	l.tat.Store(b.g.TAT)
}

// maxLaneAllow bounds what the fast lane admits between two locked calls:
// past it, one call takes the lock and the estimate is asked again.
const maxLaneAllow = 1 << 20

// newLane returns a closed lane at interval and burst.
func newLane(interval, burst int64) *laneState {
	l := &laneState{interval: interval, burst: burst, tau: (burst - 1) * interval}
	l.tat.Store(closedLane)
	return l
}

// admitFast admits a call arriving at now through the fast lane, if the
// lane is open, the call's turn has come and the lane has admitted fewer
// than it may, and reports whether it did.
func (b *Budget) admitFast(now, deadline int64) bool {
	l := b.lane.Load()
	if l == nil || now >= deadline {
		return false
	}
	for {
		tat := l.tat.Load()
		if tat == closedLane || tat-l.tau > now || l.granted.Load() >= l.allow.Load() {
			return false // closed, the call must wait, or the estimate asked again: the locked path decides
		}
		if l.tat.CompareAndSwap(tat, gcra.Spend(tat, now, 1, l.interval)) {
			l.granted.Add(1)
			l.last.Store(now)
			return true
		}
	}
}
