package core

import "github.com/headgate-go/headgate/core/ratelimit"

// bucketSeen is the controller's evidence that the server's quota is a
// bucket (GCRA, token bucket), not a counter of Limit per window: more
// than twice its Limit admitted within one window's length. No window
// counter admits that many — a fixed window at most its Limit at the end
// of one window and its Limit again at the start of the next; a sliding
// window's weighted count, fewer — while a bucket with a burst of Limit
// admits its burst plus its rate over the window (a GCRA server at 100/s
// whose Limit is its burst of 10: 110 in a second).
//
// On a bucket, a refusal's reset is when the bucket is full again, not a
// window's turn: "Retry-After 2, reset 1 s" is a server pause whose end,
// rounded down to the second, reads a whole rounding before its
// Retry-After (GitHub's epoch reset), not a sliding window's turn before
// the next call fits (turnsFirst).
type bucketSeen struct {
	seen bool  // more than twice the Limit admitted within a window
	from int64 // when the first request of the span being counted was sent
	n    int64 // admissions sent since from
}

// observe counts one admission sent at sent, against the server's Limit
// per window length (both known, or nothing is counted).
func (b *bucketSeen) observe(sent int64, limit int, length int64) {
	if b.seen || limit <= 0 || length <= 0 {
		return
	}
	if b.n == 0 || sent < b.from || sent >= b.from+length {
		b.from, b.n = sent, 0 // a new span, from this admission
	}
	if b.n++; b.n > 2*int64(limit) {
		b.seen = true
	}
}

// windowTurnsFirst is turnsFirst, for a refusal that came at now, on a
// server not seen to be a bucket, whose window could hold the calls that
// refusal needs (turnEmpty).
func (c *control) windowTurnsFirst(f ratelimit.Feedback, now int64) bool {
	return !c.bucket.seen && turnsFirst(f) && !c.turnEmpty(f, now)
}
