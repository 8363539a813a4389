// Package shape is the pace a response's quota report allows until its
// reset: never plan to spend the remaining quota faster than it returns.
// Its invariant: a shape only ever slows a pace (a longer interval, a
// smaller burst, never below 1), and only until the reset.
package shape

import (
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// A Pace is what a quota report's Remaining, Limit and Reset allow until
// the reset.
type Pace struct {
	Interval int64 // minimum interval; 0 for none
	Burst    int64 // at most this many at once
	Until    int64 // the report's reset instant
}

// Slow returns interval and burst slowed by p while it holds.
func (p Pace) Slow(now, interval, burst int64) (int64, int64) {
	if now < p.Until {
		interval = max(interval, p.Interval)
		burst = max(1, min(burst, p.Burst))
	}
	return interval, burst
}

// Of returns the pace a response's quota report allows until the reset,
// at now (nanoseconds on the caller's clock): what remains, plus what
// returns before the reset (the quota's Limit, when known), spread over
// the time to the reset, and never more at once than remain. The spread
// assumes the quota returns as it is spent, as GCRA and token-bucket
// servers refill. An extra dimension's quota report (tokens) shapes its
// pace this way, and a Store shapes the fleet's. The reset is cut to
// maxPause: a report can slow a budget no longer than a pause could.
//
// Servers state the reset in whole seconds, rounded up, so a reset of R
// seconds may mean any time in (R-1, R]: the spread uses the earliest, R-1
// (nothing for R ≤ 1 s), so rounding never slows a budget below what the
// server allows.
func Of(f ratelimit.Feedback, now int64, maxPause time.Duration) (Pace, bool) {
	if f.Remaining < 0 || f.Reset <= 0 {
		return Pace{}, false
	}
	spendable := int64(max(f.Remaining, f.Limit))
	if spendable <= 0 {
		return Pace{}, false
	}
	reset := min(f.Reset, maxPause)
	return Pace{
		Interval: max(0, int64(reset-time.Second)) / spendable,
		Burst:    max(1, int64(f.Remaining)),
		Until:    now + int64(reset),
	}, true
}
