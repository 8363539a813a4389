package core

import (
	"errors"
	"math"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// An Option configures a Budget. Options are applied in order; invalid
// values make NewBudget (and Disabled) return an error naming each option
// at fault, all of them joined.
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
	dims        []dimConfig       // WithDimension
	backfill    bool              // WithBackfill
	profile     ratelimit.Profile // WithProfile
	errs        []error
}

func newConfig(opts []Option) config {
	c := config{maxPause: DefaultMaxPause, adaptive: DefaultAdaptive()}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

func (c *config) fail(err error) { c.errs = append(c.errs, err) }

// err returns every configuration error found, joined (nil for none).
func (c *config) err() error {
	if len(c.errs) == 1 {
		return c.errs[0]
	}
	return errors.Join(c.errs...)
}

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

// WithMaxPause bounds every wait the server's responses can cause: the
// pause one response asks for, and any wait the estimate of the quota
// sets on the responses' word. While callers wait, no stretch with no
// request sent lasts longer than d plus one interval of the configured
// pace; a server that still refuses then may pause the budget again, and
// nothing else stacks. The default is DefaultMaxPause (one hour); d must
// be positive.
func WithMaxPause(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d <= 0 || d > maxSpan {
			c.fail(configErrorf("WithMaxPause", "must be positive and at most 73 years, got %v", d))
		}
		c.maxPause = d
	})
}
