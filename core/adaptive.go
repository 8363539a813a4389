package core

import (
	"math"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// The feedback controller: what a response's Feedback does to the pace and
// the pause. The policy itself is control (control.go): the quota model
// learnt from evidence, the probes, adaptive throttling; this wrapper
// keeps what the scheduler reads of it — the pace a quota report allows
// (shape), how many may go when a pause ends — and nothing of the
// scheduler's. The seam is narrow:
//
//   - the scheduler asks pace and dimPace for the effective pace at now,
//     afterPause for how many may go at once when the pause ends, and
//     reportEnds for the instant the pace changes by itself (a quota
//     report running out), when it re-times its waiters;
//   - the budget calls apply, under its lock, once per response, and
//     enacts the verdict it returns (verdict: a pause, a probe and its
//     hold, the end of a hold, a kept place) on the scheduler's state,
//     re-timing the waiters when apply reports a change.
//
// A store-backed budget shares its verdicts through its Store, which keeps
// the fleet's factor (MemoryStore runs fleetFactor) and only mirrors it
// here.
type controller struct {
	maxPause   time.Duration // read-only after construction
	pol        control       // the policy
	shape      shape         // what the last quota report for requests allows
	dimShapes  []shape       // the same per extra dimension, by index
	dimIndex   func(name string) int
	pauseAllow int64 // how many may go at once when the pause ends; 0: the burst
}

func newController(cfg Adaptive, maxPause time.Duration) controller {
	return controller{maxPause: maxPause, pol: newControl(cfg)}
}

// factor is the adaptive multiplier on the configured rate, in (0, 1].
func (c *controller) factor() float64 { return c.pol.factor }

// pace returns the effective interval and burst at now of a configured
// pace: slowed by adaptive throttling and by the server's quota report.
func (c *controller) pace(now, interval, burst int64) (int64, int64) {
	if f := c.pol.factor; f < 1 {
		interval = int64(float64(interval) / f)
	}
	return c.shape.slow(now, interval, burst)
}

// dimPace is pace for extra dimension i, which only quota reports slow.
func (c *controller) dimPace(i int, now, interval, burst int64) (int64, int64) {
	return c.dimShapes[i].slow(now, interval, burst)
}

// afterPause is how many requests may go at once when the pause ends (0:
// the burst).
func (c *controller) afterPause() int64 { return c.pauseAllow }

// reportEnds is when the requests' quota report stops slowing the pace.
func (c *controller) reportEnds() int64 { return c.shape.until }

// apply takes one response's feedback at now (the request sent at sent, or
// justNow: at an instant not known, counted as after any cut; interval and
// burst are the configured pace), extends p by the pause the
// policy decides, and returns the policy's verdict for the rest. It
// reports whether the pace or the pause changed.
func (c *controller) apply(status int, f ratelimit.Feedback, sent, now, interval, burst int64, justNow bool, p *pause) (verdict, bool) {
	fresh := c.pol.fresher(observation{f: f, sent: sent})
	v := c.pol.observe(observation{status: status, f: f, sent: sent, now: now, interval: interval, burst: burst, justNow: justNow})
	changed := v.cut || v.grew
	if v.pause > now && !v.whole && c.barePause(f, v.pause) {
		v.whole = true
	}
	if c.pol.model == modelWindowed || v.whole {
		c.shape = shape{} // a windowed quota is spent, then waited for: not spread
	}
	if v.pause > now && p.extend(v.pause, status) {
		c.pauseAllow = v.allow
		changed = true
	}
	if fresh && c.pol.model != modelWindowed {
		if s, ok := shapeOf(f, now, c.maxPause); ok && (f.Pause == 0 || f.Reset > f.Pause) && s.until > p.until {
			// (A pause that lasts until the reset covers the report's window;
			// so does a server pause that ends after it: nothing goes until
			// then, and a shape carried to the pause's end would hold the
			// burst that goes then to what the report said remained.)
			c.shape = s
			changed = true
		}
	}
	// The quotas a response reported for extra dimensions (a Quota whose
	// Name, or else Unit, is a dimension's name, such as
	// x-ratelimit-remaining-tokens for "tokens") shape them the same way.
	if c.dimIndex != nil {
		for _, q := range f.Quotas {
			i := c.dimIndex(q.Name)
			if i < 0 {
				i = c.dimIndex(q.Unit)
			}
			if i < 0 {
				continue
			}
			if s, ok := shapeOf(ratelimit.Feedback{Remaining: q.Remaining, Limit: q.Limit, Reset: q.Reset}, now, c.maxPause); ok {
				c.dimShapes[i] = s
				changed = true
			}
		}
	}
	return v, changed
}

// barePause reports whether a refusal is a server pause ending at until
// that reports no quota — a Retry-After alone, longer than the rounding
// (onlyPause) — while no quota report runs past its end: nothing then says
// any of the quota is still spent when it ends, and what the pause allows
// (the burst: pauseAllowance) may go at once, as after a pause that
// reports the whole quota back (verdict.whole). Without it, a report from
// before the pause that held the burst to what remained (a sliding
// window's Remaining 0 until its window's end) would carry past the
// pause's end: the pace re-timed there starts from the one it allowed,
// one request at once, and the quota the pause left whole goes at the
// pace — the window that the server's pause emptied is spent late.
func (c *controller) barePause(f ratelimit.Feedback, until int64) bool {
	return f.Limit < 0 && f.Remaining < 0 && f.Reset < 0 && c.pol.onlyPause(f, 0) && c.shape.until <= until
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

// pauseAllowance is how many requests may go at once when a pause ends: no
// more than the server said it holds. With no quota reported, nothing bounds
// it but the budget's burst. When the pause lasts until the quota's reset,
// the server holds its Limit again. When it ends sooner (a Retry-After
// shorter than the reset, as GCRA servers send) the server holds less than
// its Limit: one request goes, and the rest follow at the pace.
func pauseAllowance(f ratelimit.Feedback, burst int64) int64 {
	switch {
	case f.Limit <= 0:
		return burst
	case f.Reset >= 0 && f.Reset <= f.Pause:
		return min(burst, int64(f.Limit))
	default:
		return 1
	}
}

// Adaptive tunes adaptive throttling: the pacing rate's response to
// refusals.
//
// A refusal that shows the pace above the server's — a 429 or 503 whose
// quota is not whole again when its wait ends, or whose wait is a second
// or less — multiplies the effective rate by Decrease, never below MinRate
// × the configured rate, nor, when the rate was above the one the server
// states (its Limit per window), below that one. A response to a request sent before the last
// decrease does not decrease again, so one burst of refusals counts once.
// A refusal that only says "pause" (a longer wait, the quota whole after
// it), and one from a server whose quota comes in fixed windows, pause
// without slowing the pace. Recovery follows CUBIC: the rate climbs fast at
// first and flattens as it nears the rate that drew the decrease, which it
// reaches after the time a linear climb of Increase × the configured rate
// per second would take; it climbs only while responses show room (never
// while they report the quota spent or draining), up to the configured
// rate. Other 5xx responses and transport errors change nothing. (A budget
// WithStore shares the factor with its fleet by the same rules, applied
// once across it: see fleetFactor.)
type Adaptive struct {
	Decrease float64 // multiplier on a refusal, in (0, 1]; default 0.5
	MinRate  float64 // floor, as a fraction of the configured rate, in (0, 1]; default 0.1
	Increase float64 // recovery speed, as a fraction of the configured rate per second (see above), in (0, 1]; default 0.1
}

// DefaultAdaptive returns the adaptive throttling every budget has unless
// told otherwise: halve on a refusal, never below a tenth, back at the rate
// that failed after five seconds (the time a tenth per second would take). It is a function, not a variable, so
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

// slow returns interval and burst slowed by the shape while it holds.
func (s shape) slow(now, interval, burst int64) (int64, int64) {
	if now < s.until {
		interval = max(interval, s.interval)
		burst = max(1, min(burst, s.burst))
	}
	return interval, burst
}
