package core

import "math"

// gcra is the pacing state of a budget: the generic cell rate algorithm in
// its virtual-scheduling form. All times are nanoseconds on the budget's
// monotonic clock; every method is a pure function of the time it is given.
//
// tat is the theoretical arrival time of the next request. A request that
// arrives at now gets its turn at max(now, tat-tau), and moves tat to
// max(tat, now)+interval. In any window of length W at most
// burst + floor(W/interval) turns are given.
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

// tau is how far ahead of tat a request may go: (burst-1) × interval.
func (g *gcra) tau() int64 { return (g.burst - 1) * g.interval }

// reserve takes the next turn for a request arriving at now. The turn is at
// or after notBefore (the end of a server pause). If the turn would come at
// or after deadline, nothing changes and ok is false; t.sendAt still says
// when the turn would have been.
func (g *gcra) reserve(now, notBefore, deadline int64) (t turn, ok bool) {
	base := max(g.tat, now)
	sendAt := max(now, notBefore, base-g.tau())
	t = turn{sendAt: sendAt, tatBefore: g.tat, tatAfter: base + g.interval}
	if sendAt >= deadline {
		return t, false
	}
	g.tat = t.tatAfter
	return t, true
}

// cancel gives a turn back when nobody reserved after it, and reports
// whether it did. A turn in the middle of the queue stays spent: giving it
// back would move the later turns, which their owners planned on.
func (g *gcra) cancel(t turn) bool {
	if g.tat != t.tatAfter {
		return false
	}
	g.tat = t.tatBefore
	return true
}

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
