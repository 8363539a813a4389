package core

import "time"

// NewLearningBudget returns a budget that knows no rate and learns it from
// the server, for an API whose limit is not known in advance (or changes).
//
// It starts conservatively: the first call goes alone, and every other
// caller waits for its response (at most learnHold). From then on the
// budget paces at what the freshest report says: the quota q per window w
// of an IETF RateLimit-Policy, or else the X-RateLimit Limit per its reset
// (at least a second, as servers round it), with a burst of that quota;
// pauses, refusals and the feedback controller work as for NewBudget. A
// report never speeds the budget beyond the fastest pace reports have
// shown. Until a response reports a quota, it paces at one request per
// second.
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
	b.ctl.probe = probe{armed: true, holdFor: learnHold}
	return b, nil
}

// learnHold is how long a learning budget's first call may keep the others
// waiting for its answer.
const learnHold = int64(time.Second)

// learnLocked sets a learning budget's rate and burst from a fresh report:
// the IETF policy's quota per window, or the Limit per its reset. It
// reports whether the pace changed.
func (b *Budget) learnLocked(f Feedback) bool {
	r, ok := reportedRate(f)
	if !ok || b.learned && r.Interval() >= b.rate.Interval() {
		return false // never slower than a report showed: refusals slow it
	}
	if err := b.checkSpanLocked(r, "learned rate"); err != nil {
		return false
	}
	b.rate, b.burst, b.learned = r, int64(r.Requests), true
	return true
}

// reportedRate is the rate a report states: an IETF policy's quota q per
// window w, or Limit per Reset (at least a second: servers round resets to
// whole seconds).
func reportedRate(f Feedback) (Rate, bool) {
	if f.Limit <= 0 || f.Limit > 1<<20 {
		return Rate{}, false
	}
	for _, q := range f.Quotas {
		if q.Limit == f.Limit && q.Window > 0 && (q.Unit == "" || q.Unit == "requests") {
			return Rate{Requests: f.Limit, Period: q.Window}, true
		}
	}
	if f.Reset < 0 {
		return Rate{}, false
	}
	return Rate{Requests: f.Limit, Period: max(f.Reset, time.Second)}, true
}
