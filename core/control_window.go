package core

import (
	"math"

	"github.com/headgate-go/headgate/core/ratelimit"
)

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
	// rising from one group to the next is a turn, if the server decided
	// the group before first (ordered).
	sent        int64 // the latest group's send time
	low         int   // the least Remaining in it
	lowRecv     int64 // when the first report of that least Remaining came
	prevLow     int   // the least Remaining in the group before; -1: none
	prevLowRecv int64 // when the first report of that one came

	// Whether refused requests count (watchCounted).
	admitSent   int64 // the latest send time of an admitted request that reported its quota; math.MinInt64: none
	refusedSent int64 // the latest send time of a refused request; math.MinInt64: none

	// The window, as its probe's answer left it (allowance): left grants
	// still to go in it, then a probe at leftAt, the others held until
	// leftHold. 0 left: none counted.
	left, leftAt, leftHold int64
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
	} else if f.Reset > 0 && !(refusal && c.onlyPause(f, o.now)) { // a pause's reset is no window
		c.win.length = max(c.win.length, (int64(f.Reset)+coarse-1)/coarse*coarse)
	}
	w := &c.win
	if o.sent > w.sent {
		w.sent, w.prevLow, w.prevLowRecv, w.low, w.lowRecv = o.sent, w.low, w.lowRecv, f.Remaining, o.now
	} else if f.Remaining < w.low {
		w.low, w.lowRecv = f.Remaining, o.now
	}
	switch {
	case refusal:
		if w.turn > 0 && o.sent >= w.turn+w.length {
			w.turn = 0
		}
	case w.prevLow >= 0 && f.Remaining > w.prevLow && w.turn < w.sent && w.ordered(o.sent):
		w.turn = o.now
	}
}

// ordered reports whether a request sent at sent reached the server after
// it had decided the request that reported the group before's least
// Remaining: that answer had come when it was sent. Only then does its
// Remaining, risen, show quota back. Sent sooner, within a burst that
// leaves over a few ms on a loaded machine, it may have reached the
// server first and been counted before that one: the rise is the order
// of arrival, not a turn, and a turn read from it (its answer's instant,
// mid-window) predicts every later end mid-window — on a server that
// counts refusals, a probe into a spent window that costs the next one an
// admission too (fiber's sliding window over loopback: one refusal in
// every other window).
func (w windows) ordered(sent int64) bool { return sent >= w.prevLowRecv }

// policyWindow is the window of the report's binding IETF policy, or 0.
func policyWindow(f ratelimit.Feedback) int64 {
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
// clock). The evidence: a probe (sent alone, the others held) admitted two
// whole windows after the last request admitted, with refused ones
// between and none admitted, that finds the quota short of whole
// (Remaining below Limit − 1). Had the
// server counted only admissions, all of it would have returned by then on
// any quota whose window is the one its resets state: a sliding-window
// counter weighs the window before the current one, and the last
// admission's is no longer that.
//
// On such a server every refusal costs quota, and a probe into a window
// that has none spends the next window's: it stays windowed — a turn
// brings back what the window before it left, no more — and its spent
// window is waited out, not probed at the pace (allowance).
func (c *control) watchCounted(o observation, refusal bool) {
	w := &c.win
	switch {
	case refusal:
		w.refusedSent = max(w.refusedSent, o.sent)
	case o.f.Remaining >= 0:
		if c.probe.out && o.sent == c.probe.sentAt && // sent alone: its Remaining is the server's count, not a group's
			w.admitSent != math.MinInt64 && w.length > 0 && w.refusedSent > w.admitSent &&
			o.sent >= w.admitSent+2*w.length && o.f.Limit > 1 && o.f.Remaining < o.f.Limit-1 {
			c.counted = true
		}
		w.admitSent = max(w.admitSent, o.sent)
	}
}

// countable is when a window's probe planned at at goes, so that its
// answer can show refusals counted (watchCounted): two windows after the
// last admission, when at falls short of that by a tenth of a window at
// most. The windows' turn may have been read within the first burst (its
// requests reach the server in another order than they left, and a
// Remaining rises), while the burst's last request left tens of ms after
// its first (a loaded machine's goroutines take their turns late): the
// end predicted two windows on then comes just before two windows have
// passed since that request, and the probe's answer, too early to show
// the refusals counted, would read as a continuous quota's. Short by more
// — as the probe for the end of the last admission's own window, at most a
// window after it, always is — or once counted, at stands: a fixed
// window's probe for the end of the window that admitted last is never
// delayed.
func (w windows) countable(at int64, counted bool) int64 {
	if counted || w.length <= 0 || w.admitSent == math.MinInt64 {
		return at
	}
	if two := w.admitSent + 2*w.length; two > at && two-at <= w.length/10 {
		return two
	}
	return at
}

// allowance counts, on a windowed server, the grants a probe's answer left
// in its window (its Remaining: the probe went alone, so nothing else was
// counted since): once they have gone, every other caller is held for the
// window's end — with one probe then, as windowWait's — before their
// answers come back. The answer that reports the last one spent may come
// later than the pace's next turn: a window's quota, spent at once, leaves
// in waves under a cap on the calls in flight, over which the told pace
// returns a token or two; a loaded server answers a burst slowly. A
// request sent beyond them is refused, and on a server that counts
// refusals spends the next window's quota too.
func (c *control) allowance(o observation) {
	c.win.left = 0
	f := o.f
	if c.model != modelWindowed || f.Remaining <= 0 || f.Reset <= 0 {
		return
	}
	at := o.now + int64(f.Reset)
	hold := at + coarse
	if e := c.win.end(o.now); e > o.now && e < at {
		at = e
	}
	c.win.left, c.win.leftAt, c.win.leftHold = int64(f.Remaining), at, hold
}

// spent counts one grant against the window's allowance and reports
// whether that was the last: the probe for the window's end is then armed,
// and the others are to be held until leftAt.
func (c *control) spent() bool {
	if c.win.left <= 0 || c.probe.armed || c.probe.out {
		c.win.left = 0
		return false
	}
	if c.win.left--; c.win.left > 0 {
		return false
	}
	c.probe = probe{armed: true, holdUntil: c.win.leftHold}
	return true
}
