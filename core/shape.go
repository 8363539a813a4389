package core

import (
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// shape is what a response's Remaining, Limit and Reset allow until the
// reset: never plan to spend the remaining quota faster than it returns.
type shape struct {
	interval int64 // minimum interval; 0 for none
	burst    int64 // at most this many at once
	until    int64 // the report's reset instant
}

// slow returns interval and burst slowed by the shape while it holds.
func (s shape) slow(now, interval, burst int64) (int64, int64) {
	if now < s.until {
		interval = max(interval, s.interval)
		burst = max(1, min(burst, s.burst))
	}
	return interval, burst
}

// shapeOf returns the pace a response's quota report allows until the
// reset: what remains, plus what returns before the reset (the quota's
// Limit, when known), spread over the time to the reset, and never more at
// once than remain. The spread assumes the quota returns as it is spent, as
// GCRA and token-bucket servers refill. An extra dimension's quota report
// (tokens) shapes its pace this way, and a Store shapes the fleet's. The reset is cut to maxPause: a report can slow
// the budget no longer than a pause could.
//
// Servers state the reset in whole seconds, rounded up, so a reset of R
// seconds may mean any time in (R-1, R]: the spread uses the earliest, R-1
// (nothing for R ≤ 1 s), so rounding never slows the budget below what the
// server allows.
func shapeOf(f ratelimit.Feedback, now int64, maxPause time.Duration) (shape, bool) {
	if f.Remaining < 0 || f.Reset <= 0 {
		return shape{}, false
	}
	spendable := int64(max(f.Remaining, f.Limit))
	if spendable <= 0 {
		return shape{}, false
	}
	reset := min(f.Reset, maxPause)
	return shape{
		interval: max(0, int64(reset-time.Second)) / spendable,
		burst:    max(1, int64(f.Remaining)),
		until:    now + int64(reset),
	}, true
}
