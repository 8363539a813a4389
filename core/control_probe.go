package core

import "github.com/headgate-go/headgate/core/ratelimit"

// The controller's probes for a wait whose end is only known to the
// second: a windowed server's spent quota, a server pause whose end comes
// from a quota reset (no Retry-After) that may be rounded down, and a
// refusal whose quota turns at its reset a second before its Retry-After
// ends (turnsFirst: a sliding window's).

// probe is the controller's one request that finds out, while every other
// caller is held.
type probe struct {
	armed     bool  // the next request granted is the probe
	out       bool  // the probe went at sentAt; its answer is awaited
	sentAt    int64 // when the probe was sent
	holdUntil int64 // how long the others are held if no answer comes
	refillAt  int64 // a refused probe sent before this is no evidence of windows
	pause     bool  // it finds whether a server pause whose end may be rounded down is over
	gap       int64 // (pause, or windows) how long after the last refused probe this one went
	over      int64 // (pause) when the pause is over for sure: the end its reset gave, rounded down at worst, plus the rounding; 0: not known
	near      bool  // armed by a near miss, at the pace before any cut
	turn      bool  // planned just after the reset a refusal named, a whole rounding before its wait ends (turnsFirst)
	early     bool  // planned a stated interval before a coarse wait's end, on windows (windowWait)
	turned    bool  // planned after a refusal that showed a window just turned (turnProbe)
	passed    bool  // planned for the turn the named ends predict, after a reset that read passed (passedReset)

	named namedEnd // (windows) it tries the end a reset maybe rounded down names, else this plan (control_rounded.go)
}

// windowWait is the wait for a windowed server's spent quota: until the
// reported reset, or the end the windows predict when that is sooner (a
// reset rounded up to a whole second may be most of a second late). One
// probe goes then, and the rest follow at once when its answer says the
// window turned: a wrong prediction, or a server pause begun meanwhile,
// costs one refusal, not a window's worth. The others are held until that
// answer, or a second past the probe at least should none come: the
// predicted end may be only a millisecond before the reset's (a turn seen
// in one response's arrival, the reset counted from another's), and a
// hold that ended there, before the answer came, would let the window's
// quota go at the pace, not at once. (A probe a few ms short of two
// windows after the last admission goes then instead: its answer can
// show refusals counted; countable.)
func (c *control) windowWait(o observation, v verdict) verdict {
	c.win.left = 0 // (its allowance: the window's end is waited for now)
	if c.probe.armed || c.probe.out {
		return v
	}
	at := o.now + int64(o.f.Pause)
	hold := at + coarse // if the probe's answer never comes
	early := false
	if e := c.win.end(o.now); e > o.now && e < at {
		at, hold = e, max(at, e+coarse)
	} else if c.justTurned(o.f) && c.win.admitSent < o.now+int64(o.f.Reset)-c.win.length {
		// Refused at a window's turn (its reset, to the ms, a whole
		// window away) with nothing admitted since the turn: the wait
		// ends at the next turn, the window between unspent. The probe
		// goes a stated interval before, the last instant of that window
		// (turnedSpent): a sliding-window counter has nearly all of it
		// back there, spent before the turn weighs it. At the turn, the
		// window before idle, the next one is whole, which reads as a
		// fixed window's, and every other window idles (1.75× the ideal
		// for the matrix's batch begun 10 ms before a turn). Refused,
		// one more probe goes a stated interval later (turnProbe).
		// A reset in whole seconds (IETF's) cannot say whether the
		// window turned at the refusal, and the probe goes early on it
		// all the same: had the window turned an interval or two before
		// the refusal, spent already (a batch begun on a turn), the
		// probe costs one refusal more, where waiting out a window that
		// turned at the refusal idles it; a fixed window spent before
		// its reset has turned by then, unless the refusal came within
		// an interval of its turn.
		at, early = at-c.statedInterval(), true
	}
	if later := c.win.countable(at, c.counted); later > at {
		at, hold, early = later, max(hold, later+coarse), false
	}
	v.probeAt, v.holdUntil = at, hold
	c.probe = probe{armed: true, holdUntil: hold, early: early}
	return v
}

// pauseProbe ends a server pause, already in v, whose end the refusal's
// quota reset gave (no Retry-After): some servers round that reset down to
// a whole second, so the pause may go on up to a second past it. Only one
// request — the refused call's retry, in its kept place — goes when it
// ends; the rest are held until its answer, which tells whether the pause
// is over. A second past that end the pause is over for sure, a reset
// rounded down being at most that early: no later probe goes after it.
// (A probe already armed or out finds it.)
func (c *control) pauseProbe(v verdict) verdict {
	v.allow, v.whole, v.rejoin = 1, false, true
	if c.probe.armed || c.probe.out {
		return v
	}
	v.probeAt, v.holdUntil = v.pause, v.pause+coarse
	c.probe = probe{armed: true, holdUntil: v.holdUntil, pause: true, over: v.pause + coarse}
	return v
}

// refillProbe ends the full wait, already in v, of a refused probe on a
// continuous quota that reports what remains: the quota kept returning
// through the wait, so a flat allowance at its end is a guess — too many
// on a bucket still filling, too few on a sliding window whose refusal's
// coarse wait hid a window's worth (told "1 s" a third of a second before
// its window turns, the wait ends two thirds into the next, which has
// that much back). Only the refused call's retry, in its kept place, goes
// when the wait ends; its answer's Remaining is what the rest spend at
// once (enactHoldLocked), and then the pace.
func (c *control) refillProbe(v verdict) verdict {
	v.allow, v.whole = 1, false
	if c.probe.armed || c.probe.out {
		return v
	}
	v.probeAt, v.holdUntil = v.pause, v.pause+coarse
	c.probe = probe{armed: true, holdUntil: v.holdUntil}
	return v
}

// nearTurnEarly is how much sooner than its wait the refused probe p of a
// near miss ends it on a continuous quota (refillProbe's wait): a stated
// interval when the refusal may have come just as a sliding window turned
// — its reset a whole window away (justTurned), which a whole-second
// reset of one second, as the IETF fields state it, always is — else 0.
// A near miss a hair before the turn after a window spent at once (the
// burst a pause's end lets go) and its probe the next paced turn, a hair
// after it, are both refused; the wait honoured in full then ends a hair
// after the next turn, the window between idle — its quota, a call per
// interval, never spent: a window lost (1.19× the floor for the matrix's
// pause begun 980–989 ms into a second, IETF style). A stated interval
// sooner, it ends in the window that idled, whose counter weighs the one
// before by that interval alone: the probe's answer says what remains, and
// the rest spend it at once. Refused mid-window, the wait ends with a
// call's worth less back; on a bucket, the coarse wait was long anyway.
// Only at a pace within the rate the server states (a near miss of a
// sliding window's, not a pace above the server's), and for a wait longer
// than the stated interval (a millisecond Retry-After is exact). (With
// resets finer than a second the turn shows: turnedSpent.)
func (c *control) nearTurnEarly(p probe, o observation) int64 {
	if s := c.statedInterval(); p.near && !c.aboveStated(o.interval) && c.justTurned(o.f) && s < int64(o.f.Pause) {
		return s
	}
	return 0
}

// goesOn reports whether a refusal of the probe p, sent when a wait ended,
// shows that wait going on past a reset rounded down: the probe found a
// server pause, or a windowed server's quota, still spent, and the reset it
// reports, in whole seconds, is already here.
func (c *control) goesOn(p probe, f ratelimit.Feedback) bool {
	return (p.pause || c.model == modelWindowed) && f.Pause <= 0 && f.Reset >= 0 && int64(f.Reset) < coarse
}

// reprobe answers a refused probe whose wait goes on past its rounded-down
// reset (goesOn): the wait ends within the second, so the probe goes again
// soon — one paced interval after the first refusal, twice the last gap
// after every later one — while the others stay held (a second past the
// probe at most, should no answer come). The refused call keeps its place
// for the first two, so its retry is the probe and goes first when the
// wait is over; later probes are whichever call is next, so that no one
// call spends its tries on a wait that goes on and on; the calls refused
// rejoin the head of the line, in the order of their refusals, when a
// probe finds the wait over (verdict.rejoin, place.go).
// Each refused probe is one request into the wait, and they are
// few: one per doubling of the time the wait overran its reset, over the
// paced interval (seven at 100/s for a whole second); the retry comes at
// most that overrun late. No probe goes later than when a server pause is
// over for sure (probe.over: its reset rounded down, plus the rounding):
// the doubling would overshoot it by up to 270 ms at 100/s, and the
// pause's end comes as late as that at most.
func (c *control) reprobe(o observation, v verdict, p probe) verdict {
	gap := max(c.paced(o.interval), 2*p.gap)
	at := o.now + gap
	if p.over > o.now && at > p.over {
		at = p.over
	}
	v.pause, v.keepPlace, v.rejoin = at, gap <= 2*c.paced(o.interval), true
	v.probeAt, v.holdUntil = at, at+coarse // (the hold, should no answer come)
	c.probe = probe{armed: true, holdUntil: v.holdUntil, pause: p.pause, gap: gap, over: p.over}
	return v
}

// passedReset answers a refused probe planned just after a reset that had
// come (turnsFirst, with a reset of 0), its reset still passed: the reset
// was rounded down to a second that is no turn of the server's windows (a
// window counter whose windows start off the whole second, as httprate's
// start when its limiter is built, names its end rounded down up to a
// second early) and it reads passed until the window really turns, so
// probing just after it again would be refused at every paced turn, each
// refusal read as the pace too fast, down to MinRate. The pace is left as
// it is (the window ran out, not the pace), and one probe goes a stated
// interval after the turn the named ends predict (namedEnds.next), the
// others held until the refusal's wait ends; refused there too, or with no
// turn predicted before that wait ends, the wait is honoured, and the
// refused call's retry goes alone when it ends: a window counter has had
// its quota back since its turn, somewhere in that wait, and the answer's
// Remaining is what the rest spend at once (refillProbe).
func (c *control) passedReset(o observation, v verdict, p probe) verdict {
	end := o.now + int64(o.f.Pause)
	if turn := c.named.next(o.now, c.win.length); !p.passed && turn > 0 && turn+c.statedInterval() < end {
		v.probeAt, v.holdUntil, v.keepPlace = turn+c.statedInterval(), end, true
		c.probe = probe{armed: true, holdUntil: end, turn: true, passed: true}
		return v
	}
	v.pause, v.keepPlace = end, true
	return c.refillProbe(v)
}

// windowNotPace reports whether a refusal, its reset read passed, came at a
// pace of at most the server's Limit per second: no bucket whose Limit is
// its burst refuses there — its reset (the time to full, an epoch second
// rounded down) reads passed only when it refills in under a second, more
// than Limit per second — so a window ran out, not the pace: the window
// counter's end is waited for (passedReset), the pace left as it is. (Told
// above a bucket's rate, its Limit a tenth of the pace per second, the
// refusal shows the pace: TestBatchGitHubBucketToldAboveItsRate.)
func (c *control) windowNotPace(o observation) bool {
	return o.f.Reset == 0 && o.f.Limit > 0 && c.paced(o.interval)*int64(o.f.Limit) >= coarse
}

// turnsFirst reports whether a refusal's spent quota turns at its reset a
// whole rounding before the wait it names ends: a sliding-window counter's
// window ends, and a sliver of its quota returns, well before the
// Retry-After rounded up to whole seconds (a window of L spent at once: the
// next call fits 1/L of a window after the reset; "2 s", reset "1 s").
func turnsFirst(f ratelimit.Feedback) bool {
	return f.Remaining == 0 && f.Reset >= 0 && int64(f.Reset)+coarse <= int64(f.Pause)
}

// turnEmpty reports whether a refusal that came at now, its wait a whole
// rounding past its reset (turnsFirst), names a window none of the calls
// admitted was sent in: the last was sent before the turn its reset
// implies (its reset less a window), on a server whose resets say when its
// windows turn (exactResets) and that counts no refusals. A window counter
// names a wait past its next turn only when the window that ends there
// holds its Limit already (its weight there is whole); one that holds
// none of them does not — the refusal is a server pause, its reset
// rounded down to the second (an epoch's) a whole rounding before its
// Retry-After rounded up (onlyPause). At a pause begun just after a batch
// spent its window at once, before a turn, the paced call just after the
// turn found it: read as a window turning first, two probes went into
// the pause, where the pause begun within the burst, found at its start,
// read as a pause (which of the two came was the order the burst's
// goroutines reached the server in). A rounded-down reset implies a turn
// no later than the real one, and a reset rounded up (a delta's) proves
// nothing: exact resets only, and one that names a turn to come (one read
// passed is passedReset's).
func (c *control) turnEmpty(f ratelimit.Feedback, now int64) bool {
	return c.exactResets && !c.counted && c.win.length > 0 && f.Reset > 0 &&
		c.win.admitSent < now+int64(f.Reset)-c.win.length
}

// turnedEarly answers a refused probe that was planned just after the
// reset a sliding window's refusals named (p.turn), on a continuous quota
// whose refusal now names a coarse wait (a whole second or less): the
// window turned, and the probe reached the server a hair before the new
// window's first call fits — a counter whose previous window admitted L
// fits the next call 1/L of a window after its turn. One more probe goes
// an interval of the server's stated rate later, the others held as
// before; refused too, the wait is honoured. Honoured at once, it would
// idle through the window that turned, which returns its quota a call
// per interval (httprate's Retry-After is always its whole window).
func (c *control) turnedEarly(o observation, v verdict) verdict {
	v.probeAt, v.holdUntil, v.keepPlace = o.now+c.statedInterval(), o.now+int64(o.f.Pause), true
	c.probe = probe{armed: true, holdUntil: v.holdUntil}
	return v
}

// nearRefused answers the refused probe of a near miss (p.near: armed at
// the pace the miss was excused at) on a continuous quota, whose refusal
// names a coarse wait (a whole second or less): the miss was none, the
// pace is above the server's. It is cut, and one more probe goes at the
// cut pace's next turn — the probe that a first refusal at that pace
// would send — the others held until the wait ends; refused too, the wait
// is honoured. Honoured at once, a GCRA server's Retry-After, a whole
// second rounded up from the few ms to its next token, idled the callers
// for that second (make demo told twice its server's rate, its first
// wave's near miss probed at the told pace: 1.8× the ideal).
func (c *control) nearRefused(o observation, v verdict) verdict {
	v = c.cut(o, v)
	wait, at := int64(o.f.Pause), c.paced(o.interval)
	if wait <= at {
		v.pause, v.allow = o.now+wait, 1
		return v
	}
	v.probeAt, v.holdUntil = o.now+at, o.now+wait
	c.probe = probe{armed: true, holdUntil: v.holdUntil}
	return v
}

// turnedSpent reports whether a refused probe p shows a sliding window
// that turned with its quota still spent (justTurned), on a server whose
// resets say when its windows turn (exactResets: a whole second may be
// any time within it). A sliding-window counter whose window before
// admitted its Limit fits its next call one stated interval after the
// turn; a probe that reached it sooner is refused a hair early, and its
// coarse wait, honoured, would idle through a window that returns its
// quota a call per interval. On a continuous quota that is the evidence;
// on windows, only for the probe planned a stated interval before a
// coarse wait's end (p.early, windowWait): a fixed window is whole there.
func (c *control) turnedSpent(p probe, o observation) bool {
	switch c.model {
	case modelContinuous:
		return c.exactResets && c.justTurned(o.f)
	case modelWindowed:
		return p.early && c.justTurned(o.f)
	}
	return false
}

// justTurned reports whether a report of the quota spent for a coarse
// wait names a window that began less than two stated intervals before
// it: its reset is a whole window away, give or take those (any reset
// within the second, rounded up to one). A sliding-window counter whose
// window before admitted its Limit fits the first call one stated
// interval after its turn and the next one after that: a request that
// reached it sooner, a burst's or a pace's faster than the server's, was
// refused a hair early. (A server seen counting refusals is windowed: its
// turn brings back only what the window before left.)
func (c *control) justTurned(f ratelimit.Feedback) bool {
	s := c.statedInterval()
	return !c.counted && s > 0 && f.Remaining == 0 && f.Pause > 0 && int64(f.Pause) <= coarse &&
		int64(f.Reset)+2*s > c.win.length
}

// turnProbe answers a refused probe that shows a window turned with its
// quota spent (turnedSpent): one more probe goes a stated interval later,
// the others held as before (turnedEarly). Admitted with part of the quota
// back, it shows the quota continuous; refused too, the wait is honoured.
// Honoured at once, the wait would end at the next turn, a whole window
// of quota idle.
func (c *control) turnProbe(o observation, v verdict) verdict {
	v = c.turnedEarly(o, v)
	c.probe.turned = true // (refused too, the wait is honoured: no third probe)
	return v
}
