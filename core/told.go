package core

import "math/bits"

// The told bound: no turn is granted before the told GCRA allows it.
//
// b.g paces at the effective pace, and it carries more than the sends so
// far: pause floors, the controller's hold, a quota report's shape. A
// server's report may also set it back (setTatLocked: a probe's answer, a
// whole quota after a pause), releasing turns the pacing so far had
// spent. Without a record of what was sent, such a report could let the
// budget send faster than the rate and burst it was told: a burst spent,
// a probe one turn later, and its answer let burst − 1 more go at once.
//
// b.told is that record: a GCRA at the configured rate and burst, spent
// once for every turn granted, at the instant the turn was reserved for
// (toldSentLocked, from sentLocked and the backfill's grant), and by
// nothing else. Seen as token buckets — b.g holds burst′ − (g.tat −
// t)/interval′ tokens at t, b.told burst − (told.tat − t)/interval, each
// capped at its burst — the invariant, under mu, is
//
//	from the gate on (max(now, gate)), b.g's state before the queued
//	reservations never holds more tokens than b.told.
//
// It holds because b.g's pace is never faster than the told one (interval′
// ≥ interval, burst′ ≤ burst): with time both refill, b.g no faster and to
// no higher cap; a grant takes one token from each; setPace and
// floorAfterPause never add tokens; and retimeQueueLocked, which follows
// every change of the gate, the pace or the state a report sets (and
// which every queued turn is reserved in), clamps b.g to toldFloorLocked
// at the gate. So every turn b.g gives — it needs a token — is one b.told
// allows. (A turn is granted at or after the instant it was reserved for:
// a waiter the timer wakes late sends late, and the next one, reserved for
// on time, may follow it sooner than an interval. That is scheduling
// noise, not a release, and nil in virtual time.)
//
// A learning budget (NewLearningBudget) was told no rate: the rate it
// learns from a report is an estimate the reports themselves overrule (a
// policy stated in whole seconds may say a tenth of the server's rate), so
// its b.g is not clamped. It keeps the record all the same.
//
// The fast lane (fast.go) spends b.g at the told pace: it opens only when
// b.told and b.g are the same state (toldMatchesLocked), so its tat is the
// record of both while it is open, and lock carries it into each.

// toldLocked brings b.told to the configured pace (SetRate, a learnt
// rate) at now, as setPace brings b.g: creating no burst credit.
func (b *Budget) toldLocked(now int64) {
	b.told.setPace(now, int64(b.rate.Interval()), b.burst)
}

// toldSentLocked spends one turn of b.told for a call granted at now, its
// turn reserved for at (at <= now).
func (b *Budget) toldSentLocked(now, at int64) {
	b.toldLocked(now)
	b.told.reserveN(at, 1)
}

// toldFloorLocked is the earliest tat b.g, at its pace, may have and hold
// no more tokens than b.told at now: now + (burst′ − burst)·interval′ +
// (told.tat − now)⁺·interval′/interval, rounded up.
func (b *Budget) toldFloorLocked(now int64) int64 {
	if b.learning {
		return idle // told no rate
	}
	b.toldLocked(now)
	iv, burst := b.g.interval, b.g.burst
	owed := max(0, b.told.tat-now) // at most burst·interval: a grant is never early for b.told
	if iv != b.told.interval {
		owed = scaleUp(owed, iv, b.told.interval)
	}
	return now - (b.told.burst-burst)*iv + owed
}

// toldMatchesLocked reports whether b.g and b.told are the same state at
// now: the same pace and tat, or both idle at now. (A learning budget's
// record bounds nothing: the lane may open whatever it says.)
func (b *Budget) toldMatchesLocked(now int64) bool {
	if b.learning {
		return true
	}
	b.toldLocked(now)
	return b.g.interval == b.told.interval && b.g.burst == b.told.burst && max(b.g.tat, now) == max(b.told.tat, now)
}

// scaleUp is ⌈d·num/den⌉ for d >= 0 and num, den > 0, saturating at
// maxSpan.
func scaleUp(d, num, den int64) int64 {
	hi, lo := bits.Mul64(uint64(d), uint64(num))
	if hi >= uint64(den) {
		return maxSpan
	}
	q, r := bits.Div64(hi, lo, uint64(den))
	if r > 0 {
		q++
	}
	return int64(min(q, maxSpan))
}
