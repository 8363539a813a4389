package core

import "math"

// What the controller learns of a windowed server's windows: their length
// and where they turn.

// windows is what the controller knows of a windowed server's windows. A
// whole-second reset says little about when a one-second window ends, but a
// window seen turning (Remaining rising between two reports) pins every
// later end: turn + k × length.
type windows struct {
	length int64 // the window's length: the IETF policy's w, or the longest reset seen outside a pause
	turn   int64 // the latest instant a window is known to have begun by; 0: none seen

	// Reports from requests sent at one instant form a group; Remaining
	// rising from one group to the next is a turn.
	sent    int64 // the latest group's send time
	low     int   // the least Remaining in it
	prevLow int   // the least Remaining in the group before; -1: none

	// Whether refused requests count (watchCounted).
	admitSent   int64 // the latest send time of an admitted request that reported its quota; math.MinInt64: none
	refusedSent int64 // the latest send time of a refused request; math.MinInt64: none
}

// end is the first window end after now that the windows predict, or 0.
func (w windows) end(now int64) int64 {
	if w.turn <= 0 || w.length <= 0 || now < w.turn {
		return 0
	}
	return w.turn + ((now-w.turn)/w.length+1)*w.length
}

// watchWindows learns the windows' length and phase from a fresh report:
// the length from the IETF policy or the longest reset, the phase from a
// Remaining that rose since the previous report (a window turned before
// this response came). A refusal for a request sent after the predicted end
// shows the prediction wrong, and it is dropped.
func (c *control) watchWindows(o observation, refusal bool) {
	f := o.f
	if w := policyWindow(f); w > 0 {
		c.win.length = w
	} else if f.Reset > 0 && !(refusal && c.onlyPause(f)) { // a pause's reset is no window
		c.win.length = max(c.win.length, (int64(f.Reset)+coarse-1)/coarse*coarse)
	}
	w := &c.win
	if o.sent > w.sent {
		w.sent, w.prevLow, w.low = o.sent, w.low, f.Remaining
	} else {
		w.low = min(w.low, f.Remaining)
	}
	switch {
	case refusal:
		if w.turn > 0 && o.sent >= w.turn+w.length {
			w.turn = 0
		}
	case w.prevLow >= 0 && f.Remaining > w.prevLow && w.turn < w.sent:
		w.turn = o.now
	}
}

// policyWindow is the window of the report's binding IETF policy, or 0.
func policyWindow(f Feedback) int64 {
	for _, q := range f.Quotas {
		if q.Limit == f.Limit && q.Window > 0 {
			return int64(q.Window)
		}
	}
	return 0
}

// watchCounted learns whether the server counts refused requests against
// its quota, as fiber's sliding window does (its previous window's count,
// refusals and all, carries whole into the current one on a whole-second
// clock). The evidence: a request admitted two whole windows after the
// last one admitted, with refused ones between and none admitted, that
// finds the quota short of whole (Remaining below Limit − 1). Had the
// server counted only admissions, all of it would have returned by then on
// any quota whose window is the one its resets state: a sliding-window
// counter weighs the window before the current one, and the last
// admission's is no longer that.
//
// On such a server every refusal costs quota, and a probe into a window
// that has none spends the next window's: it stays windowed — a turn
// brings back what the window before it left, no more — and its spent
// window is waited out, not probed at the pace.
func (c *control) watchCounted(o observation, refusal bool) {
	w := &c.win
	switch {
	case refusal:
		w.refusedSent = max(w.refusedSent, o.sent)
	case o.f.Remaining >= 0:
		if w.admitSent != math.MinInt64 && w.length > 0 && w.refusedSent > w.admitSent &&
			o.sent >= w.admitSent+2*w.length && o.f.Limit > 1 && o.f.Remaining < o.f.Limit-1 {
			c.counted = true
		}
		w.admitSent = max(w.admitSent, o.sent)
	}
}
