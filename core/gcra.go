package core

import "math"

// gcra is the pacing state of one dimension of a budget (its requests, or
// an extra dimension in units): the generic cell rate algorithm in its
// virtual-scheduling form. All times are nanoseconds on the budget's
// monotonic clock; every method is a pure function of the time it is given.
//
// tat is the theoretical arrival time of the next unit. n units may go at
// earliest(n) = tat - (burst-n)×interval; sent at s, they move tat to
// max(tat, s) + n×interval (reserveN). In any window of length W at most
// burst + floor(W/interval) units are given.
//
// Only the methods in this file write tat: reserveN is the one way to
// reserve, charge adds an overspend settled later, cancel, rewind and
// giveBack take spending back, and setPace and floorAfterPause move it to a
// new pace or past a pause. The budget's fast lane (fast.go) takes the
// same step as reserveN (earliestOf, spend) on its own copy of tat, by
// compare-and-swap, while the lane is open; under the budget's mu the lane
// is closed and g.tat is the truth.
type gcra struct {
	tat      int64 // theoretical arrival time of the next request
	interval int64 // emission interval T, > 0
	burst    int64 // requests that may go back to back, >= 1
}

// A turn is one reserved send time, with what is needed to give it back.
type turn struct {
	sendAt    int64 // when the request may be sent
	tatBefore int64 // tat before the reservation
	tatAfter  int64 // tat after the reservation
}

const never = math.MaxInt64

// idle is the tat of a state nobody has spent from: the whole burst is
// available, and sums with it never overflow.
const idle = math.MinInt64 / 2

// newGCRA returns an idle state at interval and burst.
func newGCRA(interval, burst int64) gcra { return gcra{tat: idle, interval: interval, burst: burst} }

// tau is how far ahead of tat a request may go: (burst-1) × interval.
func (g *gcra) tau() int64 { return (g.burst - 1) * g.interval }

// earliestOf is the first instant at which a state at tat, interval and
// burst holds n units (n <= burst).
func earliestOf(tat, n, burst, interval int64) int64 { return tat - (burst-n)*interval }

// spend is the GCRA step: tat after n units sent at s (s >= earliestOf).
func spend(tat, s, n, interval int64) int64 { return max(tat, s) + n*interval }

// earliest is the first instant at which g holds n units (n <= burst).
func (g *gcra) earliest(n int64) int64 { return earliestOf(g.tat, n, g.burst, g.interval) }

// reserveN spends n units sent at s (s >= earliest(n)) and returns tat
// before and after: what cancel needs to give them back. n = 0 spends
// nothing.
func (g *gcra) reserveN(s, n int64) (before, after int64) {
	before = g.tat
	if n > 0 {
		g.tat = spend(g.tat, s, n, g.interval)
	}
	return before, g.tat
}

// reserve takes the next turn for one request arriving at now, at or after
// notBefore (the end of a server pause), for MemoryStore. If the turn would
// come at or after deadline, nothing changes and ok is false; t.sendAt
// still says when the turn would have been.
//
// The request is charged from its arrival, reserveN(now, 1), as
// redisstore's take script does, decision for decision; the budget's own
// reservation (reserveLocked) charges at the send time. The two agree
// while a pause has floored tat at its end (floorAfterPause).
func (g *gcra) reserve(now, notBefore, deadline int64) (t turn, ok bool) {
	t.sendAt = max(now, notBefore, g.earliest(1))
	if t.sendAt >= deadline {
		return t, false
	}
	t.tatBefore, t.tatAfter = g.reserveN(now, 1)
	return t, true
}

// reserveAt is reserve charged at the send time, reserveN(sendAt, 1), as
// the budget's own reservation is: for a Store's turns with extra
// dimensions, whose send time may come long after the arrival.
func (g *gcra) reserveAt(now, notBefore, deadline int64) (t turn, ok bool) {
	t.sendAt = max(now, notBefore, g.earliest(1))
	if t.sendAt >= deadline {
		return t, false
	}
	t.tatBefore, t.tatAfter = g.reserveN(t.sendAt, 1)
	return t, true
}

// cancel gives a reservation back when nobody reserved after it, and
// reports whether it did. One in the middle of the queue stays spent:
// giving it back would move the later turns, which their owners planned on.
func (g *gcra) cancel(before, after int64) bool {
	if g.tat != after {
		return false
	}
	g.tat = before
	return true
}

// rewind puts g back to tat, the state before the reservations that are to
// be made again (the queue's, re-timed in order). The budget rewinds
// through rewindLocked, never below its told record.
func (g *gcra) rewind(tat int64) { g.tat = tat }

// charge returns tat after a debt of e ns (at most maxSpan) charged from
// at. It saturates maxSpan past at: a huge usage figure leaves the
// dimension in debt for 73 years rather than wrapping the debt negative.
func charge(tat, at, e int64) int64 { return min(max(tat, at)+e, at+maxSpan) }

// charge spends e ns of debt from at (an overspend settled after the
// send), saturating at maxSpan past at rather than wrapping.
func (g *gcra) charge(at, e int64) { g.tat = charge(g.tat, at, e) }

// giveBack returns d of spent time (an underspend no later reservation
// relied on).
func (g *gcra) giveBack(d int64) { g.tat -= d }

// available is how many requests could be sent back to back at now.
func (g *gcra) available(now int64) int64 {
	next := g.tat - g.tau() // time of the next turn
	if next > now {
		return 0
	}
	return min(g.burst, (now-next)/g.interval+1)
}

// setPace changes the interval and burst at now. The wait for the next turn
// is re-timed to the new interval (a rate halved doubles it), and the change
// creates no burst credit: no more requests may go at once than could
// before.
func (g *gcra) setPace(now, interval, burst int64) {
	if interval == g.interval && burst == g.burst {
		return
	}
	avail := g.available(now)
	wait := max(0, g.tat-g.tau()-now) // until the next turn
	scaled := int64(float64(wait) * float64(interval) / float64(g.interval))
	g.interval, g.burst = interval, burst
	if avail == 0 {
		g.tat = now + scaled + g.tau()
		return
	}
	g.tat = now + g.tau() - (min(avail, burst)-1)*interval
}

// floorAfterPause makes sure that when a pause ending at until is over, no
// more than allow requests go at once: what the server said it holds.
func (g *gcra) floorAfterPause(until, allow int64) {
	allow = min(max(allow, 1), g.burst)
	g.tat = max(g.tat, until+(g.burst-allow)*g.interval)
}

// rewindLocked rewinds the pacing state to tat, but never below b.sent,
// the record of the turns granted: a state that may have been taken
// before a turn granted since (a kept place, a call requeued after the
// pause, one granted ahead of the queue) must not give that turn again.
// Every turn b.g gives is then one the configured rate and burst allow
// after every turn granted, in any order.
func (b *Budget) rewindLocked(tat int64) { b.g.rewind(max(tat, b.sent)) }
