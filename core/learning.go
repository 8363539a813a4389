package core

import (
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// NewLearningBudget returns a budget that knows no rate and learns it from
// the server, for an API whose limit is not known in advance (or changes).
//
// It starts conservatively, at one request per second with a burst of one:
// the first call goes alone, and the next a second later unless the first
// one's response has taught it the rate by then. From then on it paces at
// what the freshest report says: the quota q per window w
// of an IETF RateLimit-Policy, or else the X-RateLimit Limit per its reset
// (at least a second, as servers round it), with a burst of that quota;
// pauses, refusals and the feedback controller work as for NewBudget. Of
// the Limit-per-reset estimates it keeps the fastest (a reset counts down
// as the quota returns); refusals slow it through the controller. A server
// whose quota stays whole at that pace (a GCRA server that states its
// burst as its Limit) refills faster: the rate doubles until the quota
// drains, and the refill measured then becomes the rate. A server
// that reports no quota teaches it nothing: it stays at one request per
// second (use NewBudget with the documented rate).
//
// The options are NewBudget's, but WithBurst and WithStore are errors: the
// burst is learned, and a store's fleet needs a rate every process agrees
// on.
func NewLearningBudget(opts ...Option) (*Budget, error) {
	c := newConfig(opts)
	switch {
	case c.burstSet:
		return nil, configErrorf("WithBurst", "cannot be combined with NewLearningBudget: the burst is learned")
	case c.store != nil:
		return nil, configErrorf("WithStore", "cannot be combined with NewLearningBudget")
	}
	b, err := NewBudget(Rate{Requests: 1, Period: time.Second}, opts...)
	if err != nil {
		return nil, err
	}
	b.learning = true
	return b, nil
}

// learnLocked sets a learning budget's rate and burst from a fresh
// success's report (its request sent at sent), and reports whether it did,
// and whether the report says what may go now (restart: what remains of
// the quota it found) or only how fast the quota returns (a bound learnt
// over many reports: the pacing so far stands, re-timed to the new rate;
// a report from the middle of a burst leaves out what the burst's other
// requests took). It learns an IETF policy's quota per window when the
// policy is new, or else the Limit per reset when that is faster than the
// rate so far (a reset counts down as the quota returns: the shortest one
// seen is the closest to the window), or else what the successes show
// the server admits (learnSpanLocked) or its refill measures
// (learnRefillLocked). A policy states the rate no better than a Limit
// does: a GCRA server whose burst fills in under a second states its
// burst per second.
func (b *Budget) learnLocked(status int, f ratelimit.Feedback, sent, now int64) (changed, restart bool) {
	if isRefusal(status, f) {
		b.refill.anchorAt = 0 // (a drain that drew refusals measured the burst, not the refill)
		return false, false
	}
	if status >= 300 {
		return false, false
	}
	if w := policyWindow(f); w > 0 {
		r := Rate{Requests: f.Limit, Period: time.Duration(w)}
		if !b.learned || r != b.refill.policy {
			b.refill = refillWatch{policy: r}
			ok := b.setLearnedLocked(r, int64(f.Limit))
			return ok, ok
		}
	} else if r, ok := reportedRate(f); ok && (!b.learned || r.Interval() < b.rate.Interval()) {
		ok := b.setLearnedLocked(r, int64(f.Limit))
		return ok, ok
	}
	switch {
	case !b.learned:
		return false, false
	case b.learnSpanLocked(f, sent, now):
		return true, false
	}
	return b.learnRefillLocked(f, sent)
}

// refillWatch measures how fast a server's quota returns while the quota
// drains: from an anchor report, the requests answered since and the fall
// of Remaining give what returned meanwhile.
type refillWatch struct {
	anchorAt  int64 // the anchor report's send time; 0: none
	anchorRem int   // its Remaining
	answered  int   // successes reported since, from requests sent after it
	measured  bool  // the rate is a measured refill (refineRefillLocked keeps it)
	policy    Rate  // the IETF policy the rate was last set from; zero: none
	spanFrom  int64 // the send time successes are counted from (learnSpanLocked)
	spanN     int   // the successes counted, from requests sent at or after spanFrom
}

// learnSpanLocked learns a lower bound of the server's rate from the
// successes themselves: n of them sent from spanFrom and answered by now,
// a span T in which the server decided them all, mean it admits at least
// (n − 2×Limit)/T. A continuous quota admits at most its
// burst (Limit) plus its rate × T; fixed windows of Limit at most Limit
// per window plus two partial ones; a sliding-window counter less. So the
// bound never exceeds the real rate, whatever the server's model, and a
// server whose reports understate its rate (a GCRA server stating its
// burst per second, whose bucket is whole again after each probe) is paced
// at what it showed it admits. The count runs over one stated period (at
// least a second), then starts again: the bound follows the server.
func (b *Budget) learnSpanLocked(f ratelimit.Feedback, sent, now int64) bool {
	w := &b.refill
	stated, ok := statedRate(f)
	if !ok || w.spanN == 0 || sent < w.spanFrom || sent-w.spanFrom >= max(int64(stated.Period), int64(time.Second)) {
		w.spanFrom, w.spanN = sent, 1
		return false
	}
	w.spanN++
	span := max(now, sent) - w.spanFrom
	if w.spanN <= 2*f.Limit || span <= 0 {
		return false
	}
	perSecond := float64(w.spanN-2*f.Limit) * float64(time.Second) / float64(span)
	if perSecond < b.rate.PerSecondFloat()+1 {
		return false
	}
	return b.setLearnedLocked(Rate{Requests: int(perSecond), Period: time.Second}, b.burst)
}

// learnRefillLocked learns from a server whose Limit per reset understates
// its rate (a GCRA server states its burst as the Limit, and its reset —
// the time to a full bucket, under a second — rounds to nothing). Two
// reports in a row, from requests sent one after the other at least half
// an interval of the pace apart, that find the quota whole but for the
// request itself show a server that refills faster than the budget spends:
// the rate doubles. A window cannot show that (it would need a window per
// request), but a window that turns between two requests of one burst
// looks whole to both: the lone first call, answered just before a
// window's turn, and the first call of the burst its answer sends, just
// after (fiber's windows turn on its own clock's tick, anywhere in a
// second). Sent within half an interval, the two show no refill, and
// the doubling would send a second quota into the fresh window: 3 % of
// the batch refused. Once the quota drains, the refill is
// measured: from an anchor report, eight successes later (so that a
// Remaining rounded by one token moves it an eighth at most), what was
// answered less what Remaining fell, a token short, per the time between
// their sends, rounded down. It becomes the rate when slower than the pace
// and faster than the report states, and the controller's cuts drawn by
// the doubling are undone; refineRefillLocked keeps it at the refill from
// then on. A quota at 0 measures nothing (the server floors it); a slower
// server shows itself by refusals, which the controller answers.
func (b *Budget) learnRefillLocked(f ratelimit.Feedback, sent int64) (changed, restart bool) {
	w, last := &b.refill, b.ctl.pol.last
	switch {
	case w.measured:
		return b.refineRefillLocked(f, sent), false
	case f.Limit <= 0 || f.Remaining < 0:
		return false, false
	case f.Remaining >= f.Limit-1:
		w.anchorAt = 0
		if last.remaining < f.Limit-1 || last.sent >= sent || sent-last.sent < int64(b.rate.Interval())/2 || b.rate.Requests > 1<<19 {
			return false, false
		}
		ok := b.setLearnedLocked(Rate{Requests: 2 * b.rate.Requests, Period: b.rate.Period}, b.burst)
		return ok, ok
	case f.Remaining == 0:
		w.anchorAt = 0
		return false, false
	case w.anchorAt == 0:
		w.anchorAt, w.anchorRem, w.answered = sent, f.Remaining, 0
		return false, false
	case sent <= w.anchorAt:
		return false, false
	}
	w.answered++
	if w.answered < 8 {
		return false, false
	}
	returned, span := w.answered-(w.anchorRem-f.Remaining)-1, sent-w.anchorAt
	w.anchorAt = 0
	perSecond := float64(returned) * float64(time.Second) / float64(span)
	if stated, ok := statedRate(f); returned <= 0 || perSecond >= b.rate.PerSecondFloat() ||
		ok && perSecond <= stated.PerSecondFloat() {
		return false, false // not slower than the pace, or no faster than the report states
	}
	w.measured = true
	// The refusals the doubling drew cut the pace for a rate no longer
	// paced at: the measured one starts whole.
	b.ctl.pol.factor, b.ctl.pol.failed = 1, 1
	ok := b.setLearnedLocked(Rate{Requests: max(1, int(perSecond)), Period: time.Second}, b.burst)
	return ok, ok
}

// refineRefillLocked keeps a measured rate at the server's refill. The
// first measurement, over the few tokens a fast drain leaves, is off by a
// token or so, and is taken a token short. From then on:
//   - the quota found whole twice in a row, by requests sent one after the
//     other, shows the refill above the pace: the rate creeps up by a 32nd
//     (at least a request per second), so that the pace passes the refill
//     by no more than that — even once measured again (a rate measured low, over
//     a stall of the wire whose requests reached the server together, its
//     bucket full and refilling nothing meanwhile, or a server that raised
//     its rate, is found again), but not while a cut slows the pace (the
//     quota whole then says nothing of the learned rate, which would creep
//     above the server's);
//   - then the quota drains slowly, and the refill is measured again, from
//     an anchor report until one finds it all but spent (Remaining ≤ 1),
//     over 32 answers or more: a token short of that becomes the rate. A
//     refusal voids the anchor (learnLocked): a drain that drew refusals
//     measured the server's burst, not its refill.
func (b *Budget) refineRefillLocked(f ratelimit.Feedback, sent int64) bool {
	w, last := &b.refill, b.ctl.pol.last
	switch {
	case f.Limit <= 0 || f.Remaining < 0:
		return false
	case f.Remaining >= f.Limit-1:
		w.anchorAt = 0
		if last.remaining < f.Limit-1 || last.sent >= sent || b.ctl.pol.factor < 1 {
			return false
		}
		step := max(1, b.rate.Requests/32)
		return b.setLearnedLocked(Rate{Requests: b.rate.Requests + step, Period: b.rate.Period}, b.burst)
	case w.anchorAt == 0:
		w.anchorAt, w.anchorRem, w.answered = sent, f.Remaining, 0
		return false
	case sent <= w.anchorAt:
		return false
	}
	w.answered++
	if f.Remaining > 1 {
		return false
	}
	returned, span, enough := w.answered-(w.anchorRem-f.Remaining)-1, sent-w.anchorAt, w.answered >= 32
	w.anchorAt = 0 // (a drain too fast to measure finely: the next one)
	perSecond := float64(returned) * float64(time.Second) / float64(span)
	if !enough || returned <= 0 || perSecond >= b.rate.PerSecondFloat() {
		return false
	}
	return b.setLearnedLocked(Rate{Requests: max(1, int(perSecond)), Period: time.Second}, b.burst)
}

// setLearnedLocked makes r, with the given burst, the learning budget's
// pace from now on.
func (b *Budget) setLearnedLocked(r Rate, burst int64) bool {
	if err := b.checkSpanLocked(r, "learned rate"); err != nil {
		return false
	}
	b.rate, b.burst, b.learned = r, max(1, burst), true
	return true
}

// statedRate is the rate a report states: an IETF policy's quota q per
// window w, or else reportedRate.
func statedRate(f ratelimit.Feedback) (Rate, bool) {
	if w := policyWindow(f); w > 0 {
		return Rate{Requests: f.Limit, Period: time.Duration(w)}, true
	}
	return reportedRate(f)
}

// reportedRate is the rate a report's Limit per Reset states (at least a
// second: servers round resets to whole seconds).
func reportedRate(f ratelimit.Feedback) (Rate, bool) {
	if f.Limit <= 0 || f.Limit > 1<<20 || f.Reset < 0 {
		return Rate{}, false
	}
	return Rate{Requests: f.Limit, Period: max(f.Reset, time.Second)}, true
}
