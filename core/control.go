package core

import (
	"math"
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// control is a budget's feedback controller: what one response does to the
// pace and to the pause. It is a pure type; every method takes the time it
// acts at, on the budget's clock (nanoseconds), and the budget applies the
// verdict it returns.
//
// The model it learns. A server's quota either returns continuously (GCRA,
// token bucket, sliding window: a token per interval) or whole at the end of
// a window. The two read alike in one response, so the controller learns
// which from evidence across responses, and until it knows it lets at most
// one probe request find out:
//
//   - A 200 that spends the last token (Remaining 0) means "the next token
//     is one interval away" on a continuous server and "nothing until the
//     reset" on a windowed one. Unknown: the budget holds every caller until
//     the reset, but one probe goes when a continuous server would surely
//     have refilled a token (Reset/Limit, the quota's own refill interval).
//     The probe admitted with part of the quota spent: continuous; refused,
//     or admitted with the whole quota back (the window turned): windowed
//     — but at a pace above the rate the server states, a reset that may
//     be rounded down has its named end probed first (control_rounded.go),
//     where a bucket shows part of its quota back.
//     A server seen counting refused requests (watchCounted) stays
//     windowed: its turned window brings back only what the one before
//     it left, and each spent window is waited out, never probed into.
//   - Whole-second resets and Retry-Afters are coarse bounds (rounded up by
//     some servers, down by others): a refusal whose wait is one second or
//     less holds the callers until it, but one probe goes at the next paced
//     turn; only when the probe is refused too is the full wait honoured
//     (a near miss's probe refused maybe at a sliding window's turn: a
//     stated interval short of it, nearTurnEarly).
//   - Reports are ordered by when their request was sent: one from a
//     request sent before the freshest report's never overrides it (but
//     once answers from its burst have reported each token it left taken,
//     in whatever order they came, the last spent still arms the probe:
//     spentAfter).
//
// Pace. A refusal that only says "pause" — a wait longer than the rounding
// after which the quota is whole again — and a refusal from a windowed
// server (its window ran out, the pace is not at fault) pause without
// cutting the pace; so does a refusal while the pace is within the rate the
// server states (Limit per window: a near miss, see aboveStated; the pace
// is trimmed by one request per window, see trim — at once, before any
// near miss, once the quota is seen to be a sliding window's:
// slidingTrim), and a refusal at a pace
// the server was seen to keep (keptPace). A refusal whose quota turns at
// its reset a second before its wait ends is no pause (turnsFirst), unless
// the server was seen to be a bucket (bucketSeen). Any other
// refusal shows the pace above the server's and cuts the rate factor by
// Adaptive.Decrease, down to the rate the server states at the lowest
// when the pace was above it (once per burst: a response to a request sent before
// the last cut does not cut again). Recovery follows
// a CUBIC curve (RFC 9438, as the AWS SDKs' adaptive retry mode does): quick
// at first, flat near the factor that drew the cut, probing beyond it only
// slowly. Its clock runs only while responses show room (Remaining above 0
// or not reported): a server that reports its last token spent allows no
// faster pace, and the factor never exceeds 1, nor, once the pace was
// trimmed, one request per window below the rate the server states
// (ceiling).
type control struct {
	cfg   Adaptive
	model quotaModel

	factor  float64 // multiplier on the configured rate, in [cfg.MinRate, 1]
	failed  float64 // the factor that drew the last cut (CUBIC's W_max)
	cutAt   int64   // when the factor was last cut; math.MinInt64 for never
	grewAt  int64   // the last response that could grow the factor
	growing int64   // time spent growing since the cut (CUBIC's t), ns

	last          quotaReport // the freshest quota report, by its request's send time
	lows          lowReports  // the low Remainings successes reported, and when their requests were sent (spentAfter)
	prevRemaining int         // the Remaining of the report before it; -1 when unknown
	probe         probe
	win           windows    // where a windowed server's windows turn
	kept          keptPace   // evidence that the server keeps up with a pace (control_kept.go)
	run           spentRun   // admissions since a report of the quota spent: how fast the server returns tokens (control_kept.go)
	counted       bool       // the server counts refused requests against its quota (watchCounted)
	bucket        bucketSeen // evidence that the quota is a bucket, not a window counter (control_bucket.go)
	named         namedEnds  // where the resets' named ends show the windows turn (control_rounded.go)
	exactResets   bool       // a reset finer than whole seconds was seen: the server's resets say when its windows turn (justTurned)
	trimmed       bool       // the pace was trimmed for a near miss at the stated rate: growth stops below it (ceiling)
	hind          hindsight  // a first refusal's cut the answers after it may show a near miss (control_hindsight.go)
}

// quotaModel is how the controller believes the server's quota returns.
type quotaModel uint8

const (
	modelUnknown    quotaModel = iota
	modelContinuous            // GCRA, token bucket, sliding window
	modelWindowed              // fixed windows: whole again at the reset
)

// quotaReport is the quota state one response reported.
type quotaReport struct {
	sent, recv int64 // when its request was sent, when the response came
	remaining  int   // -1 when unknown
	limit      int   // -1 when unknown
	reset      int64 // until the quota is whole, a coarse bound; -1 when unknown
}

// concurrent is how close two sends must be for the server to have decided
// them in either order, at the least: a burst leaves within it.
const concurrent = int64(time.Millisecond)

// coarse is the granularity of whole-second resets and Retry-Afters: a
// value of one second or less may mean anything from a few milliseconds.
const coarse = int64(time.Second)

// verdict is what the budget does about one response.
type verdict struct {
	pause     int64 // extend the server's pause to this instant; 0 for none
	allow     int64 // how many may go at once when the pause or hold ends; 0: the burst
	probeAt   int64 // hold every caller until probeAt, then let one probe go; 0 for none
	holdUntil int64 // after the probe went, hold the others until here
	release   bool  // the probe's answer came: end the hold now
	endHold   bool  // the probe was refused: end the hold, the refusal's wait replaces it
	from      int64 // (release) when the answer's request was sent
	remaining int64 // (release) what its report said remains; -1: unknown
	keepPlace bool  // a refused call: its retry goes first when the wait ends
	rejoin    bool  // a call refused while probes find when a wait ends: its retry goes first when one finds it over, place kept or not (place.go)
	whole     bool  // (pause) the whole quota is back when it ends: allow may go at once, whatever the pace spent before
	cut       bool  // the factor was cut
	restored  bool  // the factor is back at 1 after a cut
	grew      bool  // the factor grew
}

func newControl(cfg Adaptive) control {
	return control{cfg: cfg, factor: 1, failed: 1, cutAt: math.MinInt64, grewAt: math.MinInt64,
		last: quotaReport{sent: math.MinInt64, remaining: -1, limit: -1, reset: -1}, prevRemaining: -1,
		win: windows{sent: math.MinInt64, low: -1, prevLow: -1, admitSent: math.MinInt64, refusedSent: math.MinInt64}}
}

// observation is one response as the controller sees it.
type observation struct {
	status    int
	f         ratelimit.Feedback
	sent, now int64
	interval  int64 // the configured interval
	burst     int64 // the configured burst
	justNow   bool  // the send time is not known (Budget.Observe): after any cut
}

// fresher reports whether a response's report is at least as fresh as the
// freshest so far: its request was sent later; or, sent no earlier than
// one round trip of the freshest (at least concurrent) before it — the
// server may have decided two such requests in either order — it reports
// less remaining (the server decided it later).
func (c *control) fresher(o observation) bool {
	l := c.last
	switch {
	case o.sent > l.sent:
		return true
	case o.f.Remaining < 0 || l.remaining < 0:
		return o.sent == l.sent
	case o.sent >= l.sent-max(l.recv-l.sent, concurrent):
		return o.f.Remaining <= l.remaining
	}
	return false
}

// isRefusal reports whether a response refused its request for the quota: a
// 429 or 503, or another error status whose headers say the quota is spent
// (GitHub answers 403). A success never is, whatever its headers say.
func isRefusal(status int, f ratelimit.Feedback) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable ||
		(status >= 400 && f.Exhausted)
}

// observe applies one response and returns what the budget must do.
func (c *control) observe(o observation) verdict {
	var v verdict
	f := o.f
	refusal := isRefusal(o.status, f)
	if !refusal && o.status >= 500 {
		return v // a failure says nothing about the quota
	}
	first := int64(-1) // the wave's admissions before this refusal, if it is the first
	if refusal && c.kept.first >= 0 && o.sent >= c.kept.after {
		first = c.kept.first
	}
	if refusal && o.sent >= c.hind.until {
		c.hind = hindsight{} // (a refusal of the wave is the same near miss)
	} else if !refusal && o.status < 400 {
		v = c.hindsightAdmit(o, v)
	}
	c.kept.observe(o, refusal, c.paced(o.interval))
	kept := c.run.kept(o.sent, o.interval) // (read before this refusal ends its run)
	c.run.observe(o, refusal)
	c.watchCounted(o, refusal)
	if !refusal && o.status < 400 {
		c.bucket.observe(o.sent, c.last.limit, c.win.length)
	}
	fresh := c.fresher(o)
	if fresh && f.Remaining >= 0 {
		c.learn(o)
		c.watchWindows(o, refusal)
		c.exactResets = c.exactResets || (f.Reset > 0 && int64(f.Reset)%coarse != 0)
		if f.Reset >= 0 && !(refusal && c.onlyPause(f, o.now)) {
			c.named.observe(o.sent, o.now, int64(f.Reset), c.win.length)
		}
		c.prevRemaining = c.last.remaining
		c.last = quotaReport{sent: o.sent, recv: o.now, remaining: f.Remaining, limit: f.Limit, reset: int64(f.Reset)}
	}
	spentF, spent := c.spentAfter(o, refusal)
	if c.probe.out && o.sent >= c.probe.sentAt { // the probe's answer, or a later one
		p := c.probe
		refillAt, holdUntil := p.refillAt, p.holdUntil
		c.probe = probe{}
		if !refusal {
			if c.model != modelContinuous && !c.counted && f.Remaining >= 0 && (f.Limit <= 1 || f.Remaining < f.Limit-1) &&
				(c.model == modelUnknown || f.Remaining >= c.prevRemaining) {
				// Part of the quota came back, not all of it (a turned window
				// would give it all, but for what a server that counts
				// refusals carried): it returns continuously — a sliding
				// window, too, once its first window has passed. (On windows,
				// only if some came back since the report before: a probe
				// for a window's end that came before it finds what the
				// window left, one less, and the rest go at once.)
				if c.model == modelWindowed { // read as windows, then returning: a sliding window's
					c.slidingTrim(o)
				}
				c.model = modelContinuous
			}
			if c.model == modelWindowed && f.Remaining == 0 && f.Pause > 0 {
				// The window's last token: its end is waited for, as any
				// report of the quota spent (below), not paced into.
				return c.windowWait(o, v)
			}
			c.allowance(o)
			v.release, v.from, v.remaining = true, o.sent, int64(f.Remaining)
			return c.grow(o, v)
		}
		v.endHold = true // the answer came: the refusal's own wait governs now
		switch {
		case p.named.at > 0 && !c.onlyPause(f, o.now): // a rounded-down reset's named end was no bucket's
			return c.namedRefused(o, v, p)
		case c.goesOn(p, f): // the wait goes on past its rounded-down reset
			return c.reprobe(o, v, p)
		case f.Pause <= 0: // a refusal that names no wait: the pace is too fast
			return c.cut(o, v)
		case f.Reset == 0 && f.Pause > 0 && (p.turn || c.statedInterval() == 0 && c.windowNotPace(o)):
			return c.passedReset(o, v, p)
		case c.windowTurnsFirst(f, o.now):
			// Refused before the reset its wave's refusals named: one more
			// probe, just after it.
			if c.aboveStated(o.interval) {
				v = c.cut(o, v)
			}
			v.probeAt, v.holdUntil, v.keepPlace = o.now+int64(f.Reset)+c.statedInterval(), o.now+int64(f.Pause), true
			c.probe = probe{armed: true, holdUntil: v.holdUntil, turn: true}
			return v
		case p.turn && c.model == modelContinuous && int64(f.Pause) <= coarse && c.statedInterval() > 0:
			return c.turnedEarly(o, v) // planned just after the turn, a hair early
		case !p.turn && !p.turned && c.turnedSpent(p, o):
			return c.turnProbe(o, v) // maybe a sliding window's turn, a hair early
		case c.onlyPause(f, o.now): // a server pause says nothing of the model, nor of the pace
			v.pause, v.allow, v.keepPlace = o.now+int64(f.Pause), pauseAllowance(f, o.burst), true
			c.kept.restart(v.pause)
			v.whole = f.Limit > 0 && f.Reset >= 0
			if f.Source != ratelimit.FromRetryAfter {
				return c.pauseProbe(v)
			}
			return v
		}
		if c.model == modelUnknown && refillAt == 0 {
			// A probe armed with no refill time (a near miss's: no
			// evidence of the model) tells nothing of windows when
			// refused: it is as early as a first refusal.
			refillAt, holdUntil = o.now+c.refill(f, o.interval), max(holdUntil, o.now+int64(f.Pause))
		}
		if c.model == modelUnknown && o.sent+concurrent < refillAt && holdUntil > refillAt {
			// Too early to tell windows from a continuous server slower than
			// the pace: the pace is cut (unless within the rate the server
			// states), and one more probe goes when a token would surely have
			// returned.
			if c.aboveStated(o.interval) {
				v = c.cut(o, v)
			}
			v.probeAt, v.holdUntil, v.keepPlace = max(o.now, refillAt), holdUntil, true
			c.probe = probe{armed: true, holdUntil: holdUntil, refillAt: refillAt}
			return v
		}
		showed := false // this refusal showed windows
		if c.model == modelUnknown && o.sent+concurrent >= refillAt {
			// Refused when a continuous server would surely have returned
			// a token: windows — or a bucket whose reset was rounded down.
			c.model, showed = modelWindowed, true
		}
		// The probe was refused: the wait was real. Honour it in full; on
		// windows, one probe finds whether the window turned (a sliding
		// window's has not, all of it); on a continuous quota that reports
		// what remains, one probe finds how much came back meanwhile.
		v.keepPlace = true
		if c.model == modelWindowed {
			if showed {
				return c.roundedResetProbe(o, v) // or windowWait's plan
			}
			return c.windowWait(o, v)
		}
		if p.near && c.model == modelContinuous && int64(f.Pause) <= coarse && c.aboveStated(o.interval) {
			return c.nearRefused(o, v) // the near miss was none: the pace is cut, and probed once more
		}
		v.pause, v.allow = o.now+int64(f.Pause), pauseAllowance(f, o.burst)
		if c.model == modelContinuous && f.Remaining >= 0 {
			v.pause -= c.nearTurnEarly(p, o)
			v = c.refillProbe(v)
		}
		if !c.aboveStated(o.interval) {
			return v // within the rate the server states: its quota ran out, not the pace
		}
		return c.cut(o, v)
	}
	if spent {
		o.f, f = spentF, spentF
	}
	switch {
	case refusal:
		factor, failed := c.factor, c.failed
		v = c.refused(o, v, kept)
		c.armHindsight(o, v, first, factor, failed)
		return v
	case (fresh || spent) && f.Remaining == 0 && f.Pause > 0 && c.model != modelContinuous:
		// The last token is spent; until the reset on a windowed server.
		if c.model == modelWindowed {
			return c.windowWait(o, v)
		}
		if !c.probe.armed && !c.probe.out {
			v.probeAt, v.holdUntil = o.now+c.paced(o.interval), o.now+int64(f.Pause)
			c.probe = probe{armed: true, holdUntil: v.holdUntil, refillAt: o.now + c.refill(f, o.interval)}
		}
		return v
	}
	return c.grow(o, v)
}

// refused applies a refusal that is not a probe's answer; kept is the
// factor the run of admissions it ended shows the server keeping (0: none).
func (c *control) refused(o observation, v verdict, kept float64) verdict {
	f := o.f
	v.keepPlace = true
	c.win.left = 0 // the window is spent, or paused: its allowance is no more
	if c.onlyPause(f, o.now) {
		v.pause, v.allow = o.now+int64(f.Pause), pauseAllowance(f, o.burst)
		c.kept.restart(v.pause)
		v.whole = f.Limit > 0 && f.Reset >= 0 // the whole quota back when it ends
		if f.Source != ratelimit.FromRetryAfter {
			return c.pauseProbe(v) // its end is a quota reset: maybe rounded down
		}
		return v
	}
	if c.model == modelWindowed {
		return c.windowWait(o, v)
	}
	near := c.kept.nearMiss(c.paced(o.interval), o.sent, o.now) // at a pace the server was seen to keep
	switch above := c.aboveStated(o.interval); {
	case !near && above && kept > c.cutLanding(o.interval):
		v = c.ease(o, v, kept)
	case !near && above:
		v = c.cut(o, v)
	case !above && f.Limit > 1:
		c.trim(o, f.Limit)
	}
	wait, at := int64(f.Pause), c.paced(o.interval)
	if !near && f.Limit < 0 && f.Remaining < 0 && f.Reset < 0 {
		// A Retry-After alone, with no quota to tell a short wait from a
		// pause: honoured as it is, and what goes at once when it ends is
		// cut with the pace.
		if wait > 0 {
			v.pause, v.allow = o.now+wait, max(1, int64(float64(pauseAllowance(f, o.burst))*c.factor))
		}
		return v
	}
	if c.probe.armed || c.probe.out {
		if v.cut && c.probe.armed && c.probe.near {
			// The probe a near miss armed at the pace just cut goes at
			// the cut pace's next turn: sooner, it is refused again.
			v.probeAt, v.holdUntil = o.now+at, c.probe.holdUntil
			c.probe.near = false
		}
		return v // one probe already finds out for this wave
	}
	// A coarse wait, or none: hold the callers until it, but let one probe
	// go at the next paced turn (a continuous server's next token).
	if wait <= at {
		if wait > 0 {
			v.pause, v.allow = o.now+wait, 1
		}
		return v
	}
	v.probeAt, v.holdUntil = o.now+at, o.now+wait
	c.probe = probe{armed: true, holdUntil: v.holdUntil, near: near}
	if c.model == modelUnknown && !near { // a near miss is no evidence of the model
		c.probe.refillAt = o.now + c.refill(f, o.interval)
	} else if c.model == modelUnknown {
		c.probe.refillAt = c.nearRefill(o, at)
	}
	return v
}

// onlyPause reports whether a refusal only says "pause": a wait longer than
// whole-second rounding, after which the quota is whole again (its reset
// comes no later, give or take that rounding, or no quota is reported) —
// and not before it (turnsFirst), unless the window its reset names holds
// none of the calls admitted (turnEmpty).
func (c *control) onlyPause(f ratelimit.Feedback, now int64) bool {
	return int64(f.Pause) > coarse && (f.Reset < 0 || int64(f.Reset) <= int64(f.Pause)+coarse) && !c.windowTurnsFirst(f, now)
}

// aboveStated reports whether the pace is above the rate the server's
// freshest report states: its Limit per window (the IETF policy's w, or the
// longest reset seen, rounded up to a whole second). A refusal at a pace
// within it is a near miss — a sliding window's counter, paced at exactly
// its rate, refuses the call a hair early — and does not show the pace too
// fast. Without a stated rate, any refusal does.
func (c *control) aboveStated(interval int64) bool {
	if c.last.limit <= 0 || c.win.length <= 0 {
		return true
	}
	return float64(c.paced(interval))*float64(c.last.limit) < float64(c.win.length)
}

// statedInterval is the interval of the rate the server states (its
// window over its Limit), or 0 when it states none.
func (c *control) statedInterval() int64 {
	if c.last.limit <= 0 || c.win.length <= 0 {
		return 0
	}
	return c.win.length / int64(c.last.limit)
}

// paced is the interval of the effective pace: the configured one over the
// factor.
func (c *control) paced(interval int64) int64 { return int64(float64(interval) / c.factor) }

// refill is when a continuous server would surely have returned a token
// after reporting its quota spent: the time its whole quota takes to return
// (Reset, a bound rounded up) over its size (Limit); without them, one
// interval of the configured pace.
func (c *control) refill(f ratelimit.Feedback, interval int64) int64 {
	if f.Limit > 0 && f.Reset > 0 {
		return max(interval, int64(f.Reset)/int64(f.Limit))
	}
	return interval
}

// learn takes evidence of the quota model from a fresh report: a report
// from a request sent after the previous report arrived (so the server saw
// it later) but surely before that report's reset (its coarse bound less a
// second), whose Remaining rose, shows a quota that returns continuously.
func (c *control) learn(o observation) {
	p, f := c.last, o.f
	if c.model != modelUnknown || p.remaining < 0 || p.reset < 0 || isRefusal(o.status, f) ||
		o.sent < p.recv || o.sent >= p.recv+p.reset-coarse {
		return
	}
	spent := 1 // this request took one
	if f.Remaining+spent > p.remaining {
		c.model = modelContinuous
	}
}
