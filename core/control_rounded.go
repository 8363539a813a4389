package core

// The probe of a rounded-down reset's named end: some servers write their
// reset as an epoch second rounded down (GitHub's X-RateLimit-Reset,
// httprate's), so a bucket spent a hair before a whole second names that
// second as its reset, though it is whole up to a second later. Read
// against a finer clock the reset is a few ms away, the probe at the next
// paced turn is refused, and the bucket reads as a spent window: every
// burst would then wait out a whole Retry-After. And where a window
// counter's named ends show its windows turn (namedEnds): off the whole
// second, its reset reads passed until the window turns.

// namedEnd is the wait a refused probe of a rounded-down reset's named
// end falls back to: the spent window's, as windowWait planned it for the
// refusal that showed windows.
type namedEnd struct {
	at, hold int64 // windowWait's probe and hold; at 0: no probe of a named end
	early    bool  // windowWait's probe.early
}

// roundedResetProbe answers the refused probe that showed windows when
// its reset is not a whole number of seconds (an epoch second read against
// a finer clock, maybe rounded down) and ends before the window's probe
// windowWait plans: one probe tries the end the reset names, turnLag
// paced intervals after it, the others held as windowWait holds them. A
// fixed window that turned there gives its whole quota back, and windows
// stay; a bucket gives part of it (observe: continuous after all).
// Refused there, the probe falls back to windowWait's plan (namedRefused):
// a sliding window's turn, its reset rounded down too, is up to a second
// past the end it names, and its counter refuses every call before it.
//
// Only at a pace above the rate the server states (aboveStated): a bucket
// whose Limit returns within the window its resets state admits any pace
// within Limit per window, so a refusal at such a pace is no bucket's —
// it is a window counter's, whose named end is no evidence (httprate's
// sliding window, told exactly, would spend one refusal a batch on it).
func (c *control) roundedResetProbe(o observation, v verdict) verdict {
	f := o.f
	v = c.windowWait(o, v)
	if f.Reset <= 0 || int64(f.Reset)%coarse == 0 || !c.aboveStated(o.interval) || v.probeAt == 0 {
		return v
	}
	at := o.now + int64(f.Reset) + turnLag*c.paced(o.interval)
	if at >= v.probeAt {
		return v
	}
	back := namedEnd{at: v.probeAt, hold: v.holdUntil, early: c.probe.early}
	v.probeAt = at
	c.probe = probe{armed: true, holdUntil: back.hold, named: back}
	return v
}

// turnLag is how many paced intervals after a named end its probe goes
// (roundedResetProbe): well before a bucket whose reset was rounded down
// is whole, and past the first call a fixed window's turn admits even with
// the clocks a hair apart.
const turnLag = 3

// namedRefused answers the refused probe of a named end (p.named): the end
// was no bucket's, nor a window's turn, or not yet. The wait is the one
// windowWait planned for the refusal that showed windows, with its probe.
func (c *control) namedRefused(o observation, v verdict, p probe) verdict {
	at := max(p.named.at, o.now)
	v.probeAt, v.holdUntil, v.keepPlace = at, max(p.named.hold, at), true
	c.probe = probe{armed: true, holdUntil: v.holdUntil, early: p.named.early}
	return v
}

// namedEnds is what the resets' named ends show of a window counter's
// windows: each response names its window's end, and the name moves a
// window later when the window turns — so the response that first names
// the next end shows the turn came by the time it was answered, and every
// later turn a whole number of windows on. Reports close together pin it
// closely; a loose pin only makes a probe after it late, never early.
type namedEnds struct {
	at     int64 // the latest end a report named (its answer's arrival plus its reset); 0: none
	turnBy int64 // an instant a window had turned by; 0: none seen
	width  int64 // how long before turnBy it may have turned: the send of the report before
	prev   int64 // the latest send of a report that named at, or read it passed
}

// observe takes the end a fresh report names, reset after now, for a
// request sent at sent, on windows of length w (0: not known yet). A reset
// of 0 names no end: the one named before passed, and its window had not
// turned when the request reached the server.
func (n *namedEnds) observe(sent, now, reset, w int64) {
	if reset == 0 {
		if n.at > 0 {
			n.prev = max(n.prev, sent)
		}
		return
	}
	at := now + reset
	if w > 0 && n.at > 0 && at-n.at >= w/2 && now-n.prev < w/2 { // (a delta reset rounded up creeps up to a second between reports far apart)
		if width := now - n.prev; n.turnBy == 0 || width <= n.width {
			n.turnBy, n.width = now, width
		}
	}
	n.at, n.prev = at, sent
}

// next is when the windows surely turn next after now, on windows of
// length w: the turn pinned by a named end's move, a whole number of
// windows on; and the end of the second the passed named end was rounded
// down from (a window's end named as an epoch second rounded down is
// reached within the second after it). 0: nothing known.
func (n namedEnds) next(now, w int64) int64 {
	if w <= 0 || n.at <= 0 {
		return 0
	}
	var next int64
	if named := n.at + (now-n.at)/w*w; n.at <= now && named+coarse > now { // the current window's named end, passed
		next = named + coarse
	}
	if n.turnBy > 0 && n.turnBy <= now {
		if t := n.turnBy + ((now-n.turnBy)/w+1)*w; next == 0 || t < next {
			next = t
		}
	}
	return next
}
