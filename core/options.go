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
	profile     Profile     // WithProfile
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
// the end). The default, and 0, mean no cap; a negative n, or one above
// math.MaxInt32, is an error. Slots are allocated as they are first used.
func WithMaxInFlight(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 || n > math.MaxInt32 { // slots are numbered in int32
			c.fail(configErrorf("WithMaxInFlight", "must be in [0, %d], got %d", math.MaxInt32, n))
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

// DefaultAdaptive is the adaptive throttling every budget has unless told
// otherwise: halve on a refusal, never below a tenth, recover a tenth of the
// configured rate per second.
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
