package core

// The requests in flight, counted against the freshest report's Remaining.
//
// Over a wire with latency, the answer that reports what remains comes a
// round trip after its request was sent, and every request sent since is
// still on its way: the server will count each of them against that
// Remaining before any answer says so. A budget that sends whenever a slot
// frees sends on while the answers saying the quota ran out are still
// coming, and each of those sends is refused. So the grants since the
// freshest report's request are counted against its Remaining (left): once
// they have spent it, the others are held until an answer comes, or for a
// round trip at most (holdFlightLocked) — a report from a request sent
// later, the quota spent or not, says again what is left.
//
// Only while the quota is not known to return continuously: on windows
// nothing returns before the window turns, and while the model is unknown
// a spent report holds the budget anyway (control.go) — until a report
// shows tokens returned while requests were in flight (more left than the
// previous report's Remaining less the grants sent between: refills): a
// bucket far away refills a round trip's worth meanwhile, and counted
// without it each grant waited for an answer. A continuous quota
// returns tokens during the round trip, at a rate the reports do not state
// reliably (a GCRA server's Limit is often its burst): there the pace and
// the factor govern, as before. Only a report that leaves some (Remaining
// above 0): one of the quota spent has its own rules (spentAfter, the
// probes). A report with nothing sent after it (zero latency) holds
// nothing: left is its Remaining. Grants sent within the spread of the
// round trips after a report's request may have reached the server before
// it, counted in its Remaining already: they are not counted again (a
// jittery wire's reordered burst would read as spent).
//
// The count is a ring of send instants written under the budget's lock
// where every locked grant is told (sentLocked): no allocation, and
// nothing on the fast lane, which stays closed while a count is on.

// flightN is how many grants the ring keeps: more than a budget capped
// at the bench's 16 in flight sends in a round trip. More in flight than
// this read as this many.
const flightN = 64

// flight is the grants' send instants and what the freshest report leaves.
type flight struct {
	at   [flightN]int64 // the latest grants' send instants, a ring
	n    uint64         // grants recorded
	on   bool           // left counts: the freshest report is a success's, on a quota not known to be continuous
	left int64          // grants still within the freshest report's Remaining
	rtt  int64          // the freshest report's round trip
	// The shortest and longest round trips seen: requests sent this much
	// apart may reach the server in either order (a jittery wire, a
	// loaded machine), so a grant sent within it after a report's request
	// may be one its Remaining counted already: it is not counted again.
	rttMin, rttMax int64
	seen           bool // rttMin and rttMax are set

	// The previous fresh success's report, and whether one since showed
	// the server returning tokens while requests were in flight (refills).
	prevSent, prevRemaining int64
	prevSet, refills        bool
}

// granted records a grant sent at at, and counts it against what the
// freshest report left. It reports whether that was the last: the others
// are to be held until an answer comes.
func (f *flight) granted(at int64) bool {
	f.at[f.n%flightN] = at
	f.n++
	if !f.on {
		return false
	}
	f.left--
	return f.left <= 0
}

// after is how many of the recorded grants were sent after t.
func (f *flight) after(t int64) int64 {
	var k int64
	for i := range min(f.n, flightN) {
		if f.at[i] > t {
			k++
		}
	}
	return k
}

// report counts a response's report against the grants sent after its
// request: a fresh success's Remaining, on a quota not known to be
// continuous, less them is what is left. A refusal ends the count (its
// own rules govern); a stale report leaves it as it is.
func (c *control) report(o observation, fresh, refusal bool) {
	if refusal {
		c.flight.on = false
		return
	}
	if !fresh || o.f.Remaining < 0 {
		return
	}
	f := &c.flight
	rtt := o.now - o.sent
	if !f.seen {
		f.rttMin, f.rttMax, f.seen = rtt, rtt, true
	}
	f.rttMin, f.rttMax = min(f.rttMin, rtt), max(f.rttMax, rtt)
	if f.prevSet && o.sent > f.prevSent {
		// What the previous report left, less the grants sent between the
		// two requests (not with this one, nor within the spread of the
		// round trips before it: the server may have decided those after
		// it): more than that, and a token more for a request overtaken
		// on the wire, was returned meanwhile.
		between := f.after(f.prevSent) - f.after(o.sent-1-(f.rttMax-f.rttMin))
		if int64(o.f.Remaining) > f.prevRemaining-between+1 {
			f.refills = true
		}
	}
	f.prevSent, f.prevRemaining, f.prevSet = o.sent, int64(o.f.Remaining), true
	f.on = (c.model == modelWindowed || c.model == modelUnknown && !f.refills) && o.f.Remaining > 0
	f.left = int64(o.f.Remaining) - f.after(o.sent+f.rttMax-f.rttMin)
	f.rtt = rtt
}

// flightHeld reports whether the grants since the freshest report have
// spent what it left while some are still unanswered: the callers are to
// be held until an answer comes.
func (c *control) flightHeld() bool {
	f := &c.flight
	return f.on && f.left <= 0 && f.after(c.last.sent+f.rttMax-f.rttMin) > 0 && !c.probe.armed && !c.probe.out
}
