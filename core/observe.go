package core

import (
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/internal/quota"
	"github.com/headgate-go/headgate/core/ratelimit"
)

// Observe reads a response's rate-limit feedback (ratelimit.Parse, with
// the budget's profile and its WithMaxPause cap) and applies it to the
// budget. It returns the feedback it applied. Call it once per response;
// NewTransport does.
//
// The permit knows when its request was sent: the response is placed at
// it, so an answer that comes late or out of order counts for the moment
// the server decided it.
func (p *Permit) Observe(status int, h http.Header) ratelimit.Feedback {
	if p.b == nil {
		return readFeedback(status, h, nil, time.Now(), 0, ratelimit.NoProfile)
	}
	return p.b.observe(status, h, nil, p.sent, 0)
}

// Observe applies a response's feedback like Permit.Observe, for a
// response whose permit is not at hand (a response decoded far from where
// it was sent). sent is when the request was sent; the zero time means
// "just now": the response is placed at the latest request sent. On a
// budget WithStore, sent is placed on the store's clock by the offset
// between the clocks its last turn measured (so one burst of refusals
// decreases the shared rate once, fleet-wide); before the budget has
// taken a turn from the store it counts as "just now".
func (b *Budget) Observe(status int, h http.Header, sent time.Time) ratelimit.Feedback {
	var at int64
	if b.pacer != nil {
		at = b.pacer.stamp(sent)
	}
	return b.observe(status, h, nil, at, 0)
}

// observe parses (with the budget's profile, from h and the body prefix
// the profile asked for, or nil) and applies feedback; sent is on the
// budget's clock. retry is the key of a refused request its caller may
// retry (a Transport's: place.go), 0 for none.
func (b *Budget) observe(status int, h http.Header, body []byte, sent int64, retry uint64) ratelimit.Feedback {
	wall := time.Now()
	now := b.now()
	f := readFeedback(status, h, body, wall, b.cfg.maxPause, b.cfg.profile)
	if b.pacer == nil { // never waits, but reports what it hears
		if f.Pause > 0 {
			b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
		}
		return f
	}
	b.pacer.feedback(status, f, sent, now, wall, retry)
	return f
}

// isRefusal reports whether a response refused its request for the quota: a
// 429 or 503, or another error status whose headers say the quota is spent
// (GitHub answers 403). A success never is, whatever its headers say.
func isRefusal(status int, f ratelimit.Feedback) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable ||
		(status >= 400 && f.Exhausted)
}

// reportOf is a response as the estimate reads it (internal/quota): its
// request sent at sent (never: not known), answered at now. A refusal's
// Retry-After is the wait it states; a quota's reset is when it returns,
// not a wait (the estimate tells which a reset means).
func reportOf(status int, f ratelimit.Feedback, sent, now int64, wall time.Time) quota.Report {
	r := quota.Report{Sent: sent, Recv: now, Refused: isRefusal(status, f),
		Remaining: f.Remaining, Limit: f.Limit, Reset: int64(f.Reset), Window: policyWindow(f),
		Resolution: resolutionOf(f.Reset, wall)}
	if sent == never {
		r.Sent = 0
	}
	if f.Reset < 0 {
		r.Reset = -1
	}
	if r.Refused && f.Pause > 0 && (f.Source == ratelimit.FromRetryAfter || f.Reset < 0 || f.Pause != f.Reset) {
		r.Wait = int64(f.Pause) // (a pause that is the quota's reset is no wait of its own)
	}
	return r
}

// resolutionOf is how finely a reset was stated: a second when it is a
// whole number of seconds from now (a delta) or ends on a whole second of
// the wall clock (an epoch or a date, read against it), a millisecond
// otherwise.
func resolutionOf(reset time.Duration, wall time.Time) int64 {
	if reset <= 0 || reset%time.Second == 0 || wall.Add(reset).Nanosecond() == 0 {
		return int64(time.Second)
	}
	return int64(time.Millisecond)
}

// policyWindow is the window of the quota the report binds to, as an IETF
// policy states it (w); 0 when none does.
func policyWindow(f ratelimit.Feedback) int64 {
	for _, q := range f.Quotas {
		if q.Limit == f.Limit && q.Window > 0 {
			return int64(q.Window)
		}
	}
	return 0
}

// apply applies parsed feedback from a response with the given status;
// sent and now are on the budget's clock; retry is the key of the refused
// request its caller may retry. The estimate (internal/quota) reads it;
// the budget enacts what it says — the server's pause, a refused call's
// reserved place at the head of the queue (place.go), the waiting calls
// re-timed — and reports the events.
//
// RateChanged is reported when adaptive throttling decreases the rate and
// when it has recovered the configured rate, not for every step between.
func (b *Budget) apply(status int, f ratelimit.Feedback, sent, now int64, wall time.Time, retry uint64) {
	refusal := isRefusal(status, f)
	if !refusal && status >= 500 {
		b.lost(sent, now) // a failure says nothing about the quota
		return
	}
	var evs [2]Event
	n := 0
	b.lock()
	oldRate := b.effectiveRateLocked()
	e := b.model.Observe(reportOf(status, f, sent, now, wall))
	changed := e.Changed
	if e.Pause > now && b.pause.moveLater(e.Pause, status, now) {
		changed = true
	}
	if b.shapeDimsLocked(f, now) {
		changed = true
	}
	if f.Pause > 0 && (e.Pause > 0 || refusal) {
		evs[n] = Event{Reason: Pushback, Wait: f.Pause, Status: status}
		n++
	}
	if changed {
		b.retimeLocked(now)
	}
	if e.KeepPlace && retry != 0 && b.waitUntilLocked(now) > now {
		b.keepPlaceLocked(now, retry)
		b.retimeLocked(now)
	}
	if e.Cut || e.Restored {
		newRate := b.effectiveRateLocked()
		evs[n] = Event{Reason: RateChanged, Status: status, OldRate: oldRate.PerSecondFloat(), NewRate: newRate.PerSecondFloat()}
		n++
	}
	b.openLaneLocked(now) // (fast.go)
	b.unlock()
	for _, ev := range evs[:n] {
		b.emit(ev)
	}
}

// waitUntilLocked is when the budget lets its next call go, by the
// server's pause and the estimate of its quota, at the earliest now.
func (b *Budget) waitUntilLocked(now int64) int64 {
	at, _ := b.model.Next(now, 1, b.quietLocked(now))
	return max(at, b.pause.until, now)
}

// quietLocked is when the callers' current silence began: the last
// request sent, or the moment a caller first waited since (now when none
// waits). No wait a response causes lasts past it plus MaxPause.
func (b *Budget) quietLocked(now int64) int64 {
	if b.pause.waitSince == 0 {
		return now
	}
	return max(b.pause.waitSince, b.model.LastSent())
}

// lost tells the estimate that the request sent at sent (on the budget's
// clock) got no answer that speaks of the quota by now: it is in flight
// no more.
func (b *Budget) lost(sent, now int64) {
	if b.pacer == nil || sent == never {
		return
	}
	b.lock()
	b.model.Lost(sent, now)
	b.retimeLocked(now)
	b.unlock()
}

// readsResponses reports whether a Transport reports b's responses.
func (b *Budget) readsResponses() bool {
	if b.pacer == nil {
		return false
	}
	b.lock()
	defer b.unlock()
	return b.model.ExpectsAnswers()
}

// expectAnswers tells the estimate that the budget's responses will be
// reported (a Transport reports each).
func (b *Budget) expectAnswers() {
	if b.pacer == nil {
		return
	}
	b.lock()
	b.model.ExpectAnswers()
	b.unlock()
}
