package core

import (
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// Observe reads a response's rate-limit feedback (ratelimit.Parse, with the
// budget's WithMaxPause cap) and applies it to the budget. It returns the
// feedback it applied. Call it once per response; NewTransport does.
//
// For adaptive throttling, a response to a request sent before the last
// decrease does not decrease again; the permit knows when its request was
// sent.
func (p *Permit) Observe(status int, h http.Header) ratelimit.Feedback {
	if p.b == nil {
		return parseFeedback(status, h, time.Now(), 0)
	}
	return p.b.observe(status, h, nil, p.sent, 0)
}

// Observe applies a response's feedback like Permit.Observe, for a
// response whose permit is not at hand (a response decoded far from where
// it was sent). sent is when the request was sent; the zero time means
// "just now", which lets a refusal decrease the rate even right after
// another decrease. On a budget WithStore, sent is placed on the store's
// clock by the offset between the clocks its last turn measured (so one
// burst of refusals decreases the shared rate once, fleet-wide); before
// the budget has taken a turn from the store it counts as "just now".
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
	f := readFeedback(status, h, body, wall, b.maxPause, b.profile)
	if b.pacer == nil { // never waits, but reports what it hears
		if f.Pause > 0 {
			b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
		}
		return f
	}
	b.pacer.feedback(status, f, sent, now, retry)
	return f
}

// apply applies parsed feedback from a response with the given status;
// sent and now are on the budget's clock; retried says whether the caller
// may retry a refused call. The policy is the controller's (adaptive.go,
// control.go): apply enacts its verdict on the pause, the controller's
// hold (hold.go), the queue (place.go) and the pace, re-times the waiters
// when any changed, and reports the events.
//
// RateChanged is reported when adaptive throttling decreases the rate and
// when it has recovered the configured rate, not for every step between.
func (b *Budget) apply(status int, f ratelimit.Feedback, sent, now int64, retry uint64) {
	justNow := sent == never // Budget.Observe with no send time
	if justNow {
		sent = now
	}
	var evs [2]Event
	n := 0
	b.lock()
	oldFactor := b.ctl.factor()
	changed := false
	if b.learning && b.ctl.pol.fresher(observation{f: f, sent: sent}) {
		learnt, restart := b.learnLocked(status, f, sent, now)
		if restart {
			b.restartLocked(now, sent, int64(f.Remaining))
		}
		changed = learnt
	}
	paused := b.pause.until
	v, c := b.ctl.apply(status, f, sent, now, int64(b.rate.Interval()), b.burst, justNow, &b.pause)
	if b.pause.until > paused {
		b.pausedAt.Store(max(now, 1)) // (pause_held.go)
	}
	changed = changed || c
	if f.Pause > 0 && (v.pause > 0 || v.probeAt > 0 || isRefusal(status, f)) {
		evs[n] = Event{Reason: Pushback, Wait: f.Pause, Status: status}
		n++
	}
	if v.whole && v.pause > now && b.pause.until == v.pause {
		// The whole quota is back when the pause ends: what it holds may go
		// at once, whatever the pace spent before.
		interval, burst := b.paceLocked(now)
		allow := burst
		if v.allow > 0 {
			allow = min(v.allow, burst)
		}
		b.g.repace(interval, burst)
		b.setTatLocked(v.pause + (burst-allow)*interval)
	}
	switch {
	case v.release && b.rejoin.n > 0:
		b.rejoinLocked(now) // (before the hold's end re-times the queue from its head)
		changed = true
	case b.rejoin.n > 0 && b.gateLocked() <= now:
		b.rejoin.n = 0 // the wait ended with no probe finding it over: nothing to rejoin
	}
	if b.enactHoldLocked(v, status, now) {
		changed = true
	}
	if v.keepPlace && retry != 0 && v.pause > now {
		// (A place is kept in a server's wait, not in the controller's
		// hold: its probe is the next call granted, and a retry that were
		// the probe again and again would run out of tries.)
		b.keepPlaceLocked(now, retry)
		changed = true
	}
	if v.rejoin && retry != 0 {
		b.rejoin.add(retry)
	}
	if changed {
		b.retimeLocked(now)
	}
	if f := b.ctl.factor(); f < oldFactor || (v.restored && oldFactor < 1) {
		r := b.rate.PerSecondFloat()
		evs[n] = Event{Reason: RateChanged, Status: status, OldRate: r * oldFactor, NewRate: r * f}
		n++
	}
	b.openLaneLocked(now) // (fast.go)
	b.unlock()
	for _, e := range evs[:n] {
		b.emit(e)
	}
}
