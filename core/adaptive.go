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
	return p.b.observe(status, h, p.sent, false)
}

// observeRetried is Observe for a response whose caller may retry the call
// (a Transport's): a refusal that makes the budget wait keeps the call's
// place at the head of the line for its retry (place.go).
func (p *Permit) observeRetried(status int, h http.Header) Feedback {
	if p.b == nil {
		return parseFeedback(status, h, time.Now(), 0)
	}
	return p.b.observe(status, h, p.sent, true)
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
	return b.observe(status, h, at, false)
}

// observe parses and applies feedback; sent is on the budget's clock.
// retried says whether the caller may retry a refused call.
func (b *Budget) observe(status int, h http.Header, sent int64, retried bool) Feedback {
	wall := time.Now()
	now := b.now()
	f := parseFeedback(status, h, wall, b.maxPause)
	if b.store != nil {
		b.reportToStore(status, f, sent)
	} else {
		b.apply(status, f, sent, now, retried)
	}
	return f
}

// apply applies parsed feedback from a response with the given status;
// sent and now are on the budget's clock. The controller (control.go)
// decides; apply enacts its verdict on the pause, the hold, the queue and
// the pace.
//
// RateChanged is reported when the controller cuts the rate and when it has
// recovered the configured rate, not for every step between.
func (b *Budget) apply(status int, f Feedback, sent, now int64, retried bool) {
	if b.disabled {
		if f.Pause > 0 {
			b.emit(Event{Reason: Pushback, Wait: f.Pause, Status: status})
		}
		return
	}
	var evs [2]Event
	n := 0
	b.mu.Lock()
	oldFactor := b.ctl.factor
	fresh := b.ctl.fresher(observation{f: f, sent: sent})
	changed := false
	if b.learning && fresh && b.learnLocked(status, f, now) {
		b.restartLocked(now, sent, int64(f.Remaining))
		changed = true
	}
	v := b.ctl.observe(observation{status: status, f: f, sent: sent, now: now,
		interval: int64(b.rate.Interval()), burst: b.burst})
	if f.Pause > 0 && (v.pause > 0 || v.probeAt > 0 || isRefusal(status, f)) {
		evs[n] = Event{Reason: Pushback, Wait: f.Pause, Status: status}
		n++
	}
	changed = changed || v.cut || v.grew
	if b.ctl.model == modelWindowed {
		b.shape = shape{} // a windowed quota is spent, then waited for: not spread
	}
	if v.pause > now && b.pause.extend(v.pause, status) {
		b.pauseAllow = v.allow
		if v.whole { // the whole quota back at the end: what it holds may go at once
			b.shape = shape{} // (the report the pause supersedes)
			interval, burst := b.paceLocked(now)
			allow := burst
			if v.allow > 0 {
				allow = min(v.allow, burst)
			}
			b.g.interval, b.g.burst = interval, burst // the pace so far does not matter
			b.setTatLocked(v.pause + (burst-allow)*interval)
		}
		changed = true
	}
	switch {
	case v.probeAt > 0:
		if b.hold > v.probeAt { // a probe again, sooner than the hold planned: re-plan from it
			b.restartLocked(now, v.probeAt-b.g.interval, 0)
		}
		b.hold, b.holdAllow, b.holdStatus = v.probeAt, 1, status
		changed = true
	case v.release && b.hold >= now:
		b.releaseLocked(now, v.from, v.remaining)
		changed = true
	case v.endHold && b.hold > now:
		b.hold = now
		changed = true
	}
	if fresh && b.ctl.model != modelWindowed {
		if s, ok := shapeOf(f, now, b.maxPause); ok && (f.Pause == 0 || f.Reset > f.Pause) {
			// (A pause that lasts until the reset covers the report's window.)
			b.shape = s
			changed = true
		}
	}
	if b.dims != nil && b.shapeDimsLocked(f, now) {
		changed = true
	}
	if v.keepPlace && retried {
		b.keepPlaceLocked(now)
		changed = true
	}
	if changed {
		b.retimeLocked(now)
	}
	if f := b.ctl.factor; f < oldFactor || (v.restored && oldFactor < 1) {
		r := b.rate.PerSecondFloat()
		evs[n] = Event{Reason: RateChanged, Status: status, OldRate: r * oldFactor, NewRate: r * f}
		n++
	}
	b.mu.Unlock()
	for _, e := range evs[:n] {
		b.emit(e)
	}
}

// gateLocked is the instant before which no call may go: the end of the
// server's pause or of the controller's hold, whichever is later.
func (b *Budget) gateLocked() int64 { return max(b.pause.until, b.hold) }

// gateAllowLocked returns the gate and how many may go at once when it ends
// (0: the burst).
func (b *Budget) gateAllowLocked() (until, allow int64) {
	until, allow = b.pause.until, b.pauseAllow
	if b.hold > b.pause.until {
		until, allow = b.hold, b.holdAllow
	}
	if allow <= 0 {
		allow = b.g.burst
	}
	return until, allow
}

// gateStatusLocked is the status of the response that set the gate.
func (b *Budget) gateStatusLocked() int {
	if b.hold > b.pause.until {
		return b.holdStatus
	}
	return b.pause.status
}

// releaseLocked ends the controller's hold at now: the probe sent at from
// left remaining requests' worth of quota (-1: unknown), and
// the quota returns at the pace from then on. The pacing state is set to
// that, whatever the hold had planned.
func (b *Budget) releaseLocked(now, from, remaining int64) {
	b.hold, b.holdAllow = now, 0
	b.restartLocked(now, from, remaining)
}

// restartLocked sets the pacing state to what a report says: the request
// sent at from found remaining requests' worth of quota left after it (-1:
// unknown, taken as none), which returns at the effective pace from then on. The pace
// takes effect at once, without the re-timing setPace does: the report,
// not the pacing so far, says what may go.
func (b *Budget) restartLocked(now, from, remaining int64) {
	interval, burst := b.paceLocked(now)
	remaining = min(max(remaining, 0), burst) // unknown: what the request took was all
	b.g.interval, b.g.burst = interval, burst
	b.setTatLocked(from + interval - remaining*interval + (burst-1)*interval) // next turn: from + (1-remaining) intervals
}

// setTatLocked sets the pacing state before the queued callers (who are
// re-timed from it) to tat.
func (b *Budget) setTatLocked(tat int64) {
	if h := b.queue.head; h != nil {
		h.turn.tatBefore = tat
	} else {
		b.g.tat = tat
	}
}

// sentLocked is told of every call granted at now. When the controller
// armed a probe, this call is it: every other caller is held until its
// answer comes (or, if none does, until the hold the controller set). It
// reports whether the call was a probe.
func (b *Budget) sentLocked(now int64) bool {
	p := &b.ctl.probe
	if !p.armed || now < b.hold {
		return false
	}
	p.armed, p.out, p.sentAt = false, true, now
	if p.holdUntil > b.hold {
		// With no answer, the hold ends at the coarse bound: one goes, and
		// the rest at the pace (the quota is not known to be whole).
		b.hold, b.holdAllow = p.holdUntil, 1
	}
	b.retimeQueueLocked(now)
	return true
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
