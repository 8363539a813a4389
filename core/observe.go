package core

import (
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
// another decrease. On a budget WithStore, sent is placed on the store's
// clock by the offset between the clocks its last turn measured (so one
// burst of refusals decreases the shared rate once, fleet-wide); before
// the budget has taken a turn from the store it counts as "just now".
func (b *Budget) Observe(status int, h http.Header, sent time.Time) Feedback {
	var at int64
	if b.pacer != nil {
		at = b.pacer.stamp(sent)
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
	if b.pacer == nil { // never waits, but reports what it hears
		if f.Pause > 0 {
			b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
		}
		return f
	}
	b.pacer.feedback(status, f, sent, now)
	return f
}

// apply applies parsed feedback from a response with the given status;
// sent and now are on the budget's clock. The policy is the controller's
// (adaptive.go): it moves the pace and extends the pause; the budget
// re-times the waiters when either changed, and reports the events.
//
// RateChanged is reported when adaptive throttling decreases the rate and
// when it has recovered the configured rate, not for every step between.
func (b *Budget) apply(status int, f Feedback, sent, now int64) {
	var evs [2]Event
	n := 0
	if f.Pause > 0 {
		evs[n] = Event{Reason: Pushback, Wait: f.Pause, Status: status}
		n++
	}
	b.mu.Lock()
	oldFactor := b.ctl.factor()
	if b.ctl.apply(status, f, sent, now, b.burst, &b.pause) {
		b.retimeLocked(now)
	}
	if f := b.ctl.factor(); f < oldFactor || (f == 1 && oldFactor < 1) {
		r := b.rate.PerSecondFloat()
		evs[n] = Event{Reason: RateChanged, Status: status, OldRate: r * oldFactor, NewRate: r * f}
		n++
	}
	b.mu.Unlock()
	for _, e := range evs[:n] {
		b.emit(e)
	}
}
