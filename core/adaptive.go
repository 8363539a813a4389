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
	return p.b.observe(status, h, p.sent)
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
	return b.observe(status, h, at)
}

// observe parses and applies feedback; sent is on the budget's clock.
func (b *Budget) observe(status int, h http.Header, sent int64) Feedback {
	wall := time.Now()
	now := b.now()
	f := parseFeedback(status, h, wall, b.maxPause)
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
	if !b.limited {
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

// aimd is the adaptive-throttling state: a multiplier on the configured
// rate, decreased on refusals and restored with time on successes.
type aimd struct {
	factor       float64 // in [MinRate, 1]
	lastDecrease int64   // when it was last decreased
	lastChange   int64   // when it last changed
}

func newAIMD() aimd { return aimd{factor: 1, lastDecrease: math.MinInt64} }

// observe applies one response at now, sent at sent: refused responses
// (429, 503, a spent quota) multiply the factor by Decrease unless the
// request was sent before the last decrease (one burst counts once); other
// responses below 500 restore Increase per second since the last change.
// Other 5xx change nothing. It reports whether the factor changed.
func (a *aimd) observe(cfg Adaptive, refused bool, status int, sent, now int64) bool {
	if !cfg.Enabled() {
		return false
	}
	switch {
	case refused:
		if sent < a.lastDecrease {
			return false
		}
		old := a.factor
		a.factor = max(cfg.MinRate, a.factor*cfg.Decrease)
		a.lastDecrease, a.lastChange = now, now
		return a.factor != old
	case status < 500 && a.factor < 1:
		since := float64(now-a.lastChange) / 1e9
		if since <= 0 {
			return false
		}
		a.factor = min(1, a.factor+cfg.Increase*since)
		a.lastChange = now
		return true
	}
	return false
}

// refused reports whether a response counts as a refusal for adaptive
// throttling: a 429, a 503, or any response whose headers say the quota is
// spent.
func refused(status int, f Feedback) bool {
	return f.Exhausted || status == 429 || status == 503
}

// Adaptive tunes adaptive throttling (AIMD on the pacing rate).
//
// Every 429 or 503, and every response whose headers say the quota is
// spent, multiplies the effective rate by Decrease, never below MinRate ×
// the configured rate. A response to a request sent before the last
// decrease does not decrease again, so one burst of refusals counts once.
// Every other response below 500 restores Increase × the configured rate
// per second since the last change, up to the configured rate. Other 5xx
// responses and transport errors change nothing.
type Adaptive struct {
	Decrease float64 // multiplier on a refusal, in (0, 1]; default 0.5
	MinRate  float64 // floor, as a fraction of the configured rate, in (0, 1]; default 0.1
	Increase float64 // recovery per second, as a fraction of the configured rate, in (0, 1]; default 0.1
}

// DefaultAdaptive returns the adaptive throttling every budget has unless
// told otherwise: halve on a refusal, never below a tenth, recover a tenth
// of the configured rate per second. It is a function, not a variable, so
// no package can change the default of every other.
func DefaultAdaptive() Adaptive { return Adaptive{Decrease: 0.5, MinRate: 0.1, Increase: 0.1} }

// WithAdaptive tunes adaptive throttling; zero fields take their defaults.
func WithAdaptive(a Adaptive) Option {
	return optionFunc(func(c *config) {
		def := DefaultAdaptive()
		if a.Decrease == 0 {
			a.Decrease = def.Decrease
		}
		if a.MinRate == 0 {
			a.MinRate = def.MinRate
		}
		if a.Increase == 0 {
			a.Increase = def.Increase
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"WithAdaptive.Decrease", a.Decrease}, {"WithAdaptive.MinRate", a.MinRate}, {"WithAdaptive.Increase", a.Increase}} {
			if err := checkFactor(f.name, f.v); err != nil {
				c.fail(err)
			}
		}
		c.adaptive = a
	})
}

// WithoutAdaptive turns adaptive throttling off: the budget keeps the
// configured rate whatever the server answers (pauses still apply).
func WithoutAdaptive() Option {
	return optionFunc(func(c *config) { c.adaptive = Adaptive{} })
}

// Enabled reports whether adaptive throttling is on (WithoutAdaptive gives
// the zero Adaptive, which is off).
func (a Adaptive) Enabled() bool { return a.Decrease > 0 && !math.IsNaN(a.Decrease) }

// shape is what a response's Remaining, Limit and Reset allow until the
// reset: never plan to spend the remaining quota faster than it returns.
type shape struct {
	interval int64 // minimum interval; 0 for none
	burst    int64 // at most this many at once
	until    int64 // the report's reset instant
}

// shapeDimsLocked applies the quotas a response reported for the budget's
// dimensions (a Quota whose Name, or else Unit, is a dimension's name, such
// as x-ratelimit-remaining-tokens for "tokens"): never plan to spend what
// remains faster than it returns, as for requests. It reports whether a
// dimension's shape changed.
func (b *Budget) shapeDimsLocked(f Feedback, now int64) bool {
	changed := false
	for _, q := range f.Quotas {
		i := b.dims.index(q.Name)
		if i < 0 {
			i = b.dims.index(q.Unit)
		}
		if i < 0 {
			continue
		}
		if s, ok := shapeOf(Feedback{Remaining: q.Remaining, Limit: q.Limit, Reset: q.Reset}, now, b.maxPause); ok {
			b.dims.d[i].shape = s
			changed = true
		}
	}
	return changed
}
