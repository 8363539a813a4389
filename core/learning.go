package core

import "time"

// NewLearningBudget returns a budget configured with no rate, for an API whose limit is
// not known in advance (or changes): it learns the quota from the server.
//
// Its first call goes alone; the others wait for its answer. From then on
// the budget paces by what the server's reports show (internal/quota): what
// remains, when the quota returns and how fast, learnt from each response
// placed at the request it answers. Nothing but the server's quota and its
// pauses bounds it, and no wait it takes on its estimate fails a call for
// its deadline: only a pause the server stated does. A server that reports
// no quota teaches it only what it refuses: the pace then starts unbounded;
// a refusal after one admitted cuts it to the rate at which the server
// returned its quota since the last cut, when that is slower than the
// Adaptive Decrease's cut, but never below MinRate of the pace refused;
// the pace then grows back along the curve Adaptive describes, and on past
// the pace refused (up to 1/MinRate of it) until the next refusal.
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
	b, err := newBudget(unbounded, c, true)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// unbounded is the configured rate of a learning budget: no pace of its
// own, so the estimate alone decides.
var unbounded = Rate{Requests: 1_000_000_000, Period: time.Second}
