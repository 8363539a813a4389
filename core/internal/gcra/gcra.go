// Package gcra is the pacing arithmetic of a budget: the generic cell rate
// algorithm in its virtual-scheduling form, over int64 nanoseconds on one
// monotonic clock. Its invariant: in any window of length W, the turns a
// State gives (and does not take back) number at most
// Burst + floor(W/Interval).
package gcra

import "math"

// A State is the pacing state of one dimension of a budget (its requests,
// or an extra dimension in units). Every method is a pure function of the
// time it is given.
//
// TAT is the theoretical arrival time of the next unit. n units may go at
// Earliest(n) = TAT - (Burst-n)×Interval; sent at s, they move TAT to
// max(TAT, s) + n×Interval (ReserveN).
//
// Only the methods of State write TAT: ReserveN is the one way to reserve,
// Charge adds an overspend settled later, Cancel, Rewind and GiveBack take
// spending back, and SetPace and FloorAfterPause move it to a new pace or
// past a pause. A caller that takes the same step on its own copy of TAT
// (core's fast lane, by compare-and-swap) uses EarliestOf and Spend.
type State struct {
	TAT      int64 // theoretical arrival time of the next request
	Interval int64 // emission interval T, > 0
	Burst    int64 // requests that may go back to back, >= 1
}

// A Turn is one reserved send time, with what is needed to give it back.
type Turn struct {
	SendAt    int64 // when the request may be sent
	TATBefore int64 // TAT before the reservation
	TATAfter  int64 // TAT after the reservation
}

// Never is a time that never comes: no deadline, nothing to wait for.
const Never = math.MaxInt64

// Idle is the TAT of a state nobody has spent from: the whole burst is
// available, and sums with it never overflow.
const Idle = math.MinInt64 / 2

// MaxSpan is the furthest ahead a budget ever plans: 2^61 ns, about 73
// years, so that sums of its times never overflow.
const MaxSpan = 1 << 61

// New returns an idle state at interval and burst.
func New(interval, burst int64) State { return State{TAT: Idle, Interval: interval, Burst: burst} }

// Tau is how far ahead of TAT a request may go: (Burst-1) × Interval.
func (g *State) Tau() int64 { return (g.Burst - 1) * g.Interval }

// EarliestOf is the first instant at which a state at tat, interval and
// burst holds n units (n <= burst).
func EarliestOf(tat, n, burst, interval int64) int64 { return tat - (burst-n)*interval }

// Spend is the GCRA step: TAT after n units sent at s (s >= EarliestOf).
func Spend(tat, s, n, interval int64) int64 { return max(tat, s) + n*interval }

// Earliest is the first instant at which g holds n units (n <= Burst).
func (g *State) Earliest(n int64) int64 { return EarliestOf(g.TAT, n, g.Burst, g.Interval) }

// ReserveN spends n units sent at s (s >= Earliest(n)) and returns TAT
// before and after: what Cancel needs to give them back. n = 0 spends
// nothing.
func (g *State) ReserveN(s, n int64) (before, after int64) {
	before = g.TAT
	if n > 0 {
		g.TAT = Spend(g.TAT, s, n, g.Interval)
	}
	return before, g.TAT
}

// Reserve takes the next turn for one request arriving at now, at or after
// notBefore (the end of a server pause). If the turn would come at or
// after deadline, nothing changes and ok is false; t.SendAt still says
// when the turn would have been.
//
// The request is charged from its arrival, ReserveN(now, 1), as
// redisstore's take script does, decision for decision (core's
// MemoryStore); a budget's own reservation charges at the send time
// (ReserveAt). The two agree while a pause has floored TAT at its end
// (FloorAfterPause).
func (g *State) Reserve(now, notBefore, deadline int64) (t Turn, ok bool) {
	t.SendAt = max(now, notBefore, g.Earliest(1))
	if t.SendAt >= deadline {
		return t, false
	}
	t.TATBefore, t.TATAfter = g.ReserveN(now, 1)
	return t, true
}

// ReserveAt is Reserve charged at the send time, ReserveN(SendAt, 1), as
// a budget's own reservation is: for a Store's turns with extra
// dimensions, whose send time may come long after the arrival.
func (g *State) ReserveAt(now, notBefore, deadline int64) (t Turn, ok bool) {
	t.SendAt = max(now, notBefore, g.Earliest(1))
	if t.SendAt >= deadline {
		return t, false
	}
	t.TATBefore, t.TATAfter = g.ReserveN(t.SendAt, 1)
	return t, true
}

// Cancel gives a reservation back when nobody reserved after it, and
// reports whether it did. One in the middle of the queue stays spent:
// giving it back would move the later turns, which their owners planned on.
func (g *State) Cancel(before, after int64) bool {
	if g.TAT != after {
		return false
	}
	g.TAT = before
	return true
}

// Rewind puts g back to tat, the state before the reservations that are to
// be made again (a queue's, re-timed in order).
func (g *State) Rewind(tat int64) { g.TAT = tat }

// Charge returns TAT after a debt of e ns (at most MaxSpan) charged from
// at. It saturates MaxSpan past at: a huge usage figure leaves the
// dimension in debt for 73 years rather than wrapping the debt negative.
func Charge(tat, at, e int64) int64 { return min(max(tat, at)+e, at+MaxSpan) }

// Charge spends e ns of debt from at (an overspend settled after the
// send), saturating at MaxSpan past at rather than wrapping.
func (g *State) Charge(at, e int64) { g.TAT = Charge(g.TAT, at, e) }

// GiveBack returns d of spent time (an underspend no later reservation
// relied on).
func (g *State) GiveBack(d int64) { g.TAT -= d }

// Available is how many requests could be sent back to back at now.
func (g *State) Available(now int64) int64 {
	next := g.TAT - g.Tau() // time of the next turn
	if next > now {
		return 0
	}
	return min(g.Burst, (now-next)/g.Interval+1)
}

// SetPace changes the interval and burst at now. The wait for the next turn
// is re-timed to the new interval (a rate halved doubles it), and the change
// creates no burst credit: no more requests may go at once than could
// before.
func (g *State) SetPace(now, interval, burst int64) {
	if interval == g.Interval && burst == g.Burst {
		return
	}
	avail := g.Available(now)
	wait := max(0, g.TAT-g.Tau()-now) // until the next turn
	scaled := int64(float64(wait) * float64(interval) / float64(g.Interval))
	g.Interval, g.Burst = interval, burst
	if avail == 0 {
		g.TAT = now + scaled + g.Tau()
		return
	}
	g.TAT = now + g.Tau() - (min(avail, burst)-1)*interval
}

// FloorAfterPause makes sure that when a pause ending at until is over, no
// more than allow requests go at once: what the server said it holds.
func (g *State) FloorAfterPause(until, allow int64) {
	allow = min(max(allow, 1), g.Burst)
	g.TAT = max(g.TAT, until+(g.Burst-allow)*g.Interval)
}
