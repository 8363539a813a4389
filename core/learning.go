package core

import "time"

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
// success's report (its request sent at sent), and reports whether it did:
// an IETF policy's quota per window, or else the Limit per reset when that
// is faster than the rate so far (a reset counts down as the quota
// returns: the shortest one seen is the closest to the window), or else
// what the server's refill measures (learnRefillLocked).
func (b *Budget) learnLocked(status int, f Feedback, sent int64) bool {
	if status >= 300 || isRefusal(status, f) {
		return false
	}
	if w := policyWindow(f); w > 0 {
		r := Rate{Requests: f.Limit, Period: time.Duration(w)}
		if b.learned && r == b.rate {
			return false
		}
		return b.setLearnedLocked(r, int64(f.Limit))
	}
	if r, ok := reportedRate(f); ok && (!b.learned || r.Interval() < b.rate.Interval()) {
		return b.setLearnedLocked(r, int64(f.Limit))
	}
	return b.learned && b.learnRefillLocked(f, sent)
}

// refillWatch measures how fast a server's quota returns while the quota
// drains: from an anchor report, the requests answered since and the fall
// of Remaining give what returned meanwhile.
type refillWatch struct {
	anchorAt  int64 // the anchor report's send time; 0: none
	anchorRem int   // its Remaining
	answered  int   // successes reported since, from requests sent after it
	measured  bool  // the rate is a measured refill: learned once and for all
}

// learnRefillLocked learns from a server whose Limit per reset understates
// its rate (a GCRA server states its burst as the Limit, and its reset —
// the time to a full bucket, under a second — rounds to nothing). Two
// reports in a row, from requests sent one after the other, that find the
// quota whole but for the request itself show a server that refills faster
// than the budget spends: the rate doubles. A window cannot show that (it
// would need a window per request). Once the quota drains, the refill is
// measured: from an anchor report, eight successes later (so that a
// Remaining rounded by one token moves it an eighth at most), what was
// answered less what Remaining fell, per the time between their sends,
// rounded down. It becomes the rate, once and for all, when slower than the
// pace and faster than the report states, and the controller's cuts drawn
// by the doubling are undone. A quota at 0 measures nothing (the server
// floors it); later, a quota whole after a wait says nothing of the refill,
// and a slower server shows itself by refusals, which the controller
// answers.
func (b *Budget) learnRefillLocked(f Feedback, sent int64) bool {
	w, last := &b.refill, b.ctl.pol.last
	switch {
	case f.Limit <= 0 || f.Remaining < 0 || w.measured:
		return false
	case f.Remaining >= f.Limit-1:
		w.anchorAt = 0
		if last.remaining < f.Limit-1 || last.sent >= sent || b.rate.Requests > 1<<19 {
			return false
		}
		return b.setLearnedLocked(Rate{Requests: 2 * b.rate.Requests, Period: b.rate.Period}, b.burst)
	case f.Remaining == 0:
		w.anchorAt = 0
		return false
	case w.anchorAt == 0:
		*w = refillWatch{anchorAt: sent, anchorRem: f.Remaining}
		return false
	case sent <= w.anchorAt:
		return false
	}
	w.answered++
	span := sent - w.anchorAt
	if w.answered < 8 || span <= 0 {
		return false
	}
	returned := w.answered - (w.anchorRem - f.Remaining)
	w.anchorAt = 0
	perSecond := float64(returned) * float64(time.Second) / float64(span)
	if stated, ok := reportedRate(f); returned <= 0 || perSecond >= b.rate.PerSecondFloat() ||
		ok && perSecond <= stated.PerSecondFloat() {
		return false // not slower than the pace, or no faster than the report states
	}
	w.measured = true
	// The refusals the doubling drew cut the pace for a rate no longer
	// paced at: the measured one starts whole.
	b.ctl.pol.factor, b.ctl.pol.failed = 1, 1
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

// reportedRate is the rate a report states: an IETF policy's quota q per
// window w, or Limit per Reset (at least a second: servers round resets to
// whole seconds).
func reportedRate(f Feedback) (Rate, bool) {
	if f.Limit <= 0 || f.Limit > 1<<20 || f.Reset < 0 {
		return Rate{}, false
	}
	return Rate{Requests: f.Limit, Period: max(f.Reset, time.Second)}, true
}
