package core

import (
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// keptPace is the controller's evidence that the server keeps up with a
// pace. Once a report shows the quota spent (Remaining 0), every later
// admission is a token the server returned; more admissions in a row, at
// one paced interval, than the burst could hold even if all of it arrived
// out of order (keptBeyondBurst more) show the server returns tokens at
// least as fast as that pace sends. A refusal at that pace, or a slower
// one, is then a near miss — callers released together at a pause's end
// leave a little late, one overtakes another on the wire, and the next
// paced call reaches the server a hair before its token — not a pace above
// the server's, and it is not cut. The evidence is spent by the near miss
// it excuses, so a second one must be earned again: a server that has
// slowed down refuses before it is, and is cut. (The refusals of requests
// already sent when the near miss was known are that same near miss.)
//
// Before the first refusal, a server that admitted the whole burst the
// budget was told has shown nothing against the told pace: the first
// refusal, at that pace, is a near miss too (a batch's first burst opens
// its connections and arrives late; the next paced call does not). So is
// a first refusal at the told pace, with a wait within the rounding of one
// interval (a whole-second Retry-After or reset of one second: an exact,
// sub-second wait says when and is honoured), of a call that
// left with the first burst or as the first paced call after it (its send
// time known: not Budget.Observe's), once the server was seen admitting
// calls of that burst: it found its quota a sliver short of whole — a
// clock a hair behind the budget's, another client's token, a GCRA
// server's rounding, a burst still opening its connections when the next
// call came — which says nothing against the pace. Told too fast a pace,
// the probe that follows is refused as well, and cut. (A refusal before
// any admission is a pause at face value: its Retry-After is honoured,
// and the call's retry goes when it ends, not into it.)
type keptPace struct {
	interval int64 // the pace shown kept (its interval); 0: none
	run      int64 // the paced interval of the run being counted; 0: none open
	from     int64 // when the request whose report showed the quota spent was sent
	n        int64 // admissions in the run since it
	first    int64 // admissions before the first refusal; -1 once it came
	firstAt  int64 // the paced interval they went at
	start    int64 // before the first refusal: the earliest send seen, the first burst's
	started  bool  // start is set

	excusing  bool  // a near miss was excused, at excusedAt
	excusedAt int64 // when its answer came
	after     int64 // first and start count the requests sent from here on: a pause's end
}

// keptBeyondBurst is how many admissions beyond the burst a run needs.
const keptBeyondBurst = 8

// observe counts one response, sent at the paced interval paced.
func (k *keptPace) observe(o observation, refusal bool, paced int64) {
	if k.first >= 0 && o.sent >= k.after && (!k.started || o.sent < k.start) {
		k.start, k.started = o.sent, true
	}
	switch {
	case k.first < 0 || o.sent < k.after:
	case refusal:
		wholeBurst := k.first >= o.burst && paced == k.firstAt
		shortOfAToken := k.first > 0 && !o.justNow && o.burst > 1 && paced == o.interval && o.sent < k.start+2*paced &&
			int64(o.f.Pause) == coarse // a whole second: a shorter wait rounded up (a Retry-After-ms is exact, and honoured)
		if (wholeBurst || shortOfAToken) && k.interval == 0 {
			k.interval = paced // the told pace, presumed
		}
		k.first = -1
	case k.first == 0 || paced == k.firstAt:
		k.first, k.firstAt = k.first+1, paced
	}
	switch {
	case refusal || (k.run != 0 && paced != k.run):
		k.run = 0 // the run is broken, or the pace changed: it shows nothing of this one
	case k.run != 0 && o.sent > k.from:
		if k.n++; k.n >= o.burst+keptBeyondBurst && (k.interval == 0 || k.run < k.interval) {
			k.interval = k.run
		}
	}
	if k.run == 0 && !refusal && o.f.Remaining == 0 {
		k.run, k.from, k.n = paced, o.sent, 0
	}
}

// nearMiss reports whether a refusal at the paced interval paced (its
// request sent at sent, its answer come at now) is a near miss, and spends
// the evidence if it is. The refusals of requests already sent when an
// excused near miss was known are that same near miss — a stall that
// bunched them, a burst the server found a token short — as the requests
// sent before a cut do not cut again: the budget could not act on it
// before they went.
func (k *keptPace) nearMiss(paced, sent, now int64) bool {
	if k.excusing && sent <= k.excusedAt {
		return true
	}
	if k.interval == 0 || paced < k.interval {
		return false
	}
	k.interval, k.run = 0, 0
	k.excusing, k.excusedAt = true, now
	return true
}

// spentRun is the evidence a refusal brings of how fast the server
// returns tokens, when the quota was seen spent before it: every admission
// of a request sent after a report of the quota spent (Remaining 0) is a
// token the server returned, but one (a token left over, or a request
// overtaken on the wire) — so a refusal that ends a run of n of them shows
// the server keeping n − 1 tokens over the time from that report's
// request to its own: a pace just above the server's, not twice it. A
// report of room (Remaining above 0), or of no quota, ends the run: what
// it admitted since may have been left over.
//
// The refusal that cut (or eased) the pace last opens a run too, from
// when its answer came (cutFrom): the quota was spent when the server
// decided it, and every admission of a request sent after the answer came
// (so decided after it, whatever the wire's order) is a token returned
// since, but one, whatever the reports between say — the quota is spent
// again at the next refusal. That run is not ended by a report of room:
// at a pace cut onto the server's own, the reports flicker between 0, 1
// and a few (a request overtaken, a caller a little late), each ending
// the run above, and a refusal soon after one found a handful of
// admissions, or fewer than three, and halved a pace just above the
// server's (make demo told twice its server's rate: 1.4× the ideal in 7
// of 24 loopback runs). The refusal reads the longer-sighted of the two
// runs (kept: the higher). Before the first cut there is no such run.
type spentRun struct {
	from int64 // when the request that reported the quota spent was sent; 0: no run open
	n    int64 // admissions sent after it since

	cutFrom int64 // when the answer of the refusal that last cut or eased the pace came; 0: none
	cutN    int64 // admissions of requests sent after it since
}

// observe counts one response: a refusal's evidence is read (kept) before.
func (r *spentRun) observe(o observation, refusal bool) {
	if !refusal && r.cutFrom != 0 && o.sent > r.cutFrom {
		r.cutN++
	}
	switch {
	case refusal:
		r.from = 0
	case o.f.Remaining == 0 && r.from == 0:
		r.from, r.n = o.sent, 0
	case r.from == 0 || o.sent <= r.from:
	case o.f.Remaining == 0:
		r.n++
	default:
		r.from = 0
	}
}

// kept is the factor of the configured pace, its interval interval, the
// runs the refusal of a request sent at sent ends show the server keeping
// (the higher); 0 when no run of at least three admissions shows one.
func (r spentRun) kept(sent, interval int64) float64 {
	return max(keptOver(r.from, r.n, sent, interval), keptOver(r.cutFrom, r.cutN, sent, interval))
}

// keptOver is the factor n admissions of requests sent after from, the
// quota spent at from and at sent, show kept: n − 1 tokens over that time.
func keptOver(from, n, sent, interval int64) float64 {
	if from == 0 || n < 3 || sent <= from {
		return 0
	}
	return float64(n-1) * float64(interval) / float64(sent-from)
}

// cut opens the run from the answer, come at now, of a refusal that cut
// or eased the pace.
func (r *spentRun) cut(now int64) { r.cutFrom, r.cutN = now, 0 }

// recovered closes the run since the cut: the pace grew back to the
// configured one (or the cut was undone), so a later refusal is about the
// server's pace now, not an average over all the time since the cut.
func (r *spentRun) recovered() { r.cutFrom, r.cutN = 0, 0 }

// restart counts the admissions before the first refusal afresh, from
// the requests sent at at on: a server pause that ends with the whole
// quota back is a fresh start, whose first burst may draw a near miss as a
// batch's first does. (A server that reports no quota, only a Retry-After,
// has no other evidence of the pace kept.)
func (k *keptPace) restart(at int64) { k.first, k.firstAt, k.started, k.after = 0, 0, false, at }

// forget drops the evidence: the pace was cut, the server is slower than
// the pace it kept.
func (k *keptPace) forget() { k.interval, k.run, k.excusing = 0, 0, false }

// trim slows the pace by one request per window of limit after a refusal
// at exactly the rate the server states: a sliding-window counter paced at
// it refuses the call at each window's turn; one less per window, never.
func (c *control) trim(o observation, limit int) {
	if !c.cfg.Enabled() || c.beforeCut(o) { // once per burst, as a cut
		return
	}
	c.factor = max(c.cfg.MinRate, c.factor*float64(limit-1)/float64(limit))
	// The trimmed pace is CUBIC's plateau, the rate to be careful near:
	// growth beyond it is slow, and stops below the stated rate (ceiling).
	c.failed, c.cutAt, c.grewAt = c.factor, o.now, o.now
	c.growing = int64(c.factor * (1 - c.cfg.Decrease) / c.cfg.Increase * 1e9)
	c.trimmed = true
}

// ceiling is the factor growth stops at (grow) once the pace was trimmed:
// one request per window below the rate the server states, for the
// configured interval. Past the plateau CUBIC climbs on wherever the
// reports show room, and a sliding-window counter paced at one request
// per window less shows a token of room whenever its requests reach it a
// little later than their turns (over a network, always): within 1.4 s
// the pace was back at the stated rate, and refused a hair early in the
// next window whose window before counted less than its Limit (over
// loopback, one or two such refusals in most batches told exactly: 0.6–
// 0.8 % of 500 calls). The ceiling follows the rate the server states (the
// freshest report's Limit per window, as aboveStated reads it); 1 until a trim, with no stated rate, or on a server seen
// admitting more than twice its Limit within a window (bucketSeen: a
// bucket that states its burst, whose stated rate is no limit).
func (c *control) ceiling(interval int64) float64 {
	l, w := c.last.limit, c.win.length
	if !c.trimmed || c.bucket.seen || l <= 1 || w <= 0 {
		return 1
	}
	return min(1, float64(interval)*float64(l-1)/float64(w))
}

// slidingTrim trims the pace ahead of the near miss (trim) on a quota
// that read as windows — a probe refused when a continuous server would
// have had a token back — and then returned part of itself: a
// sliding-window counter. Paced at exactly the rate it states, it refuses
// a call a hair early in any window whose window before counted less than
// its Limit (the weight of that one falls a call per interval while the
// pace adds a call per interval: its estimate climbs by the shortfall);
// one less per window, it never does. Only the pace the budget was told
// is trimmed: a pace cut to the stated rate is CUBIC's plateau, which a
// trim would restart growth from (the reports show room at the trimmed
// pace), climbing back above that rate; it takes the near miss's trim,
// if any. (A pace above the rate the server states is cut when refused.)
func (c *control) slidingTrim(o observation) {
	s, l := c.statedInterval(), c.last.limit
	if c.factor < 1 || s <= 0 || l <= 1 || c.aboveStated(o.interval) || o.interval*int64(l-1) >= s*int64(l) {
		return
	}
	c.trim(o, l)
}

// nearRefill is when a continuous server would surely have returned a
// token after a near miss refused at o.now, if that comes no later than
// the probe it arms, a paced interval at on: the refill of the quota the
// refusal states, or else the freshest report's (fiber's refusal states
// none). The near miss is no evidence of the model, but its probe's
// refusal then is: a continuous server that refused a hair early has a
// token by then, a spent window none. Otherwise (the quota's own refill
// is slower than the pace, as a GCRA server's with a burst below its
// rate, or no quota is stated) it is 0: the probe's refusal is as early
// as a first refusal.
func (c *control) nearRefill(o observation, at int64) int64 {
	f := o.f
	if f.Limit <= 0 || f.Reset <= 0 {
		f = ratelimit.Feedback{Limit: c.last.limit, Reset: time.Duration(c.last.reset)}
	}
	if f.Limit <= 0 || f.Reset <= 0 {
		return 0
	}
	if r := c.refill(f, o.interval); r <= at {
		return o.now + r
	}
	return 0
}
