package core

import (
	"math"
	"time"
)

// An Option configures a Budget. Options are applied in order; invalid
// values make NewBudget return an error naming the option.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	burst       int
	burstSet    bool
	maxInFlight int
	observer    Observer
	name        string
	maxPause    time.Duration
	adaptive    Adaptive
	store       Store
	dims        []dimConfig // WithDimension
	backfill    bool        // WithBackfill
	errs        []error
}

func newConfig(opts []Option) config {
	c := config{maxPause: DefaultMaxPause, adaptive: DefaultAdaptive}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

func (c *config) fail(err error) { c.errs = append(c.errs, err) }

// WithBurst sets how many requests may go back to back from an idle budget.
// The default is the rate's Requests. n must be at least 1.
func WithBurst(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 {
			c.fail(configErrorf("WithBurst", "must be at least 1, got %d", n))
		}
		c.burst, c.burstSet = n, true
	})
}

// WithMaxInFlight caps the number of open requests at n. A request holds its
// slot from before its turn until its response body is closed (or read to
// the end). The default, and 0, mean no cap; a negative n is an error.
func WithMaxInFlight(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.fail(configErrorf("WithMaxInFlight", "must not be negative, got %d", n))
		}
		c.maxInFlight = n
	})
}

// WithObserver sets the function that receives the budget's events. The
// default, and nil, report nothing.
func WithObserver(o Observer) Option {
	return optionFunc(func(c *config) { c.observer = o })
}

// WithName names the budget in its events and errors. The default is "".
func WithName(name string) Option {
	return optionFunc(func(c *config) { c.name = name })
}

// WithMaxPause caps the pause any server response can impose. The default
// is DefaultMaxPause (one hour); d must be positive.
func WithMaxPause(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d <= 0 || d > maxSpan {
			c.fail(configErrorf("WithMaxPause", "must be positive and at most 73 years, got %v", d))
		}
		c.maxPause = d
	})
}

// Adaptive tunes adaptive throttling: the pacing rate's response to
// refusals.
//
// A refusal that shows the pace above the server's — a 429 or 503 whose
// quota is not whole again when its wait ends, or whose wait is a second
// or less — multiplies the effective rate by Decrease, never below MinRate
// × the configured rate. A response to a request sent before the last
// decrease does not decrease again, so one burst of refusals counts once.
// A refusal that only says "pause" (a longer wait, the quota whole after
// it), and one from a server whose quota comes in fixed windows, pause
// without slowing the pace. Recovery follows CUBIC: the rate climbs fast at
// first and flattens as it nears the rate that drew the decrease, which it
// reaches after the time a linear climb of Increase × the configured rate
// per second would take; it climbs only while responses show room (never
// while they report the quota spent), up to the configured rate. Other 5xx
// responses and transport errors change nothing. (A budget WithStore keeps
// the earlier rule for now: every refusal decreases, and recovery is
// linear at Increase per second.)
type Adaptive struct {
	Decrease float64 // multiplier on a refusal, in (0, 1]; default 0.5
	MinRate  float64 // floor, as a fraction of the configured rate, in (0, 1]; default 0.1
	Increase float64 // recovery speed, as a fraction of the configured rate per second (see above), in (0, 1]; default 0.1
}

// DefaultAdaptive is the adaptive throttling every budget has unless told
// otherwise: halve on a refusal, never below a tenth, back at the rate that
// failed after five seconds (the time a tenth per second would take).
var DefaultAdaptive = Adaptive{Decrease: 0.5, MinRate: 0.1, Increase: 0.1}

// WithAdaptive tunes adaptive throttling; zero fields take their defaults.
func WithAdaptive(a Adaptive) Option {
	return optionFunc(func(c *config) {
		if a.Decrease == 0 {
			a.Decrease = DefaultAdaptive.Decrease
		}
		if a.MinRate == 0 {
			a.MinRate = DefaultAdaptive.MinRate
		}
		if a.Increase == 0 {
			a.Increase = DefaultAdaptive.Increase
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
