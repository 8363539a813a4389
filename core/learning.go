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
// success's report, and reports whether it did: an IETF policy's quota per
// window, or else the Limit per reset when that is faster than the rate so
// far (a reset counts down as the quota returns: the shortest one seen is
// the closest to the window).
func (b *Budget) learnLocked(status int, f Feedback, now int64) bool {
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
	return false
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
