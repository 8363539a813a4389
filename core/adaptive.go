package core

import (
	"math"
	"net/http"
	"time"
)

// Observe reads a response's rate-limit feedback (ParseFeedback, with the
// budget's WithMaxPause cap) and applies it to the budget. It returns the
// feedback it applied. Call it once per response; NewTransport does.
//
// For adaptive throttling, a response to a request sent before the last
// decrease does not decrease again; the permit knows when its request was
// sent.
func (p *Permit) Observe(status int, h http.Header) Feedback {
	if p.b == nil {
		return parseFeedback(status, h, time.Now(), 0)
	}
	return p.b.observe(status, h, nil, p.sent)
}

// Observe applies a response's feedback like Permit.Observe, for a
// response whose permit is not at hand (a response decoded far from where
// it was sent). sent is when the request was sent; the zero time means
// "just now", which lets a refusal decrease the rate even right after
// another decrease. On a budget WithStore, sent cannot be placed on the
// store's clock and counts as "just now": prefer Permit.Observe there, or
// one burst of refusals may decrease the shared rate more than once.
func (b *Budget) Observe(status int, h http.Header, sent time.Time) Feedback {
	at := b.now()
	switch {
	case b.store != nil:
		at = math.MaxInt64 // the store's clock is not ours: counts as sent after any decrease
	case !sent.IsZero():
		at = int64(sent.Sub(b.epoch))
	}
	return b.observe(status, h, nil, at)
}

// observe parses (with the budget's profile, from h and the body prefix
// the profile asked for, or nil) and applies feedback; sent is on the
// budget's clock.
func (b *Budget) observe(status int, h http.Header, body []byte, sent int64) Feedback {
	wall := time.Now()
	now := b.now()
	f := readFeedback(status, h, body, wall, b.maxPause, b.profile)
	if b.store != nil {
		b.reportToStore(status, f, sent)
	} else {
		b.apply(status, f, sent, now)
	}
	return f
}

// apply applies parsed feedback from a response with the given status;
// sent and now are on the budget's clock.
//
// RateChanged is reported when adaptive throttling decreases the rate and
// when it has recovered the configured rate, not for every step between.
func (b *Budget) apply(status int, f Feedback, sent, now int64) {
	if b.disabled {
		if f.Pause > 0 {
			b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
		}
		return
	}
	var evs [2]Event
	n := 0
	b.mu.Lock()
	oldFactor := b.aimd.factor
	changed := false
	if f.Pause > 0 {
		evs[n] = Event{Reason: Pushback, Wait: f.Pause, Status: status}
		n++
		if b.pause.extend(now+int64(f.Pause), status) {
			b.pauseAllow = pauseAllowance(f, b.burst)
			changed = true
		}
	}
	if b.aimd.observe(b.adaptive, refused(status, f), status, sent, now) {
		changed = true
	}
	if s, ok := shapeOf(f, now, b.maxPause); ok && (f.Pause == 0 || f.Reset > f.Pause) {
		// (A pause that lasts until the reset covers the report's window.)
		b.shape = s
		changed = true
	}
	if b.dims != nil && b.shapeDimsLocked(f, now) {
		changed = true
	}
	if changed {
		b.retimeLocked(now)
	}
	if f := b.aimd.factor; f < oldFactor || (f == 1 && oldFactor < 1) {
		r := b.rate.PerSecondFloat()
		evs[n] = Event{Reason: RateChanged, Status: status, OldRate: r * oldFactor, NewRate: r * f}
		n++
	}
	b.mu.Unlock()
	for _, e := range evs[:n] {
		b.emit(e)
	}
}

// shapeOf returns the pace a response's quota report allows until the
// reset: what remains, plus what returns before the reset (the quota's
// Limit, when known), spread over the time to the reset, and never more at
// once than remain. The spread assumes the quota returns as it is spent, as
// GCRA and token-bucket servers refill; a fixed-window server that runs dry
// before its reset answers the next request with a refusal, whose reset
// then pauses the budget. The reset is cut to maxPause: a report can slow
// the budget no longer than a pause could.
//
// Servers state the reset in whole seconds, rounded up, so a reset of R
// seconds may mean any time in (R-1, R]: the spread uses the earliest, R-1
// (nothing for R ≤ 1 s), so rounding never slows the budget below what the
// server allows.
func shapeOf(f Feedback, now int64, maxPause time.Duration) (shape, bool) {
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

// pauseAllowance is how many requests may go at once when a pause ends: no
// more than the server said it holds. With no quota reported, nothing bounds
// it but the budget's burst. When the pause lasts until the quota's reset,
// the server holds its Limit again. When it ends sooner (a Retry-After
// shorter than the reset, as GCRA servers send) the server holds less than
// its Limit: one request goes, and the rest follow at the pace.
func pauseAllowance(f Feedback, burst int64) int64 {
	switch {
	case f.Limit <= 0:
		return burst
	case f.Reset >= 0 && f.Reset <= f.Pause:
		return min(burst, int64(f.Limit))
	default:
		return 1
	}
}
