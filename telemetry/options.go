package telemetry

import (
	"errors"
	"math"
	"slices"
)

// An Option configures NewObserver.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	waitBuckets []float64
	err         error
}

func newConfig(opts []Option) config {
	c := config{waitBuckets: DefaultWaitBuckets}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithWaitBuckets sets the bucket boundaries, in seconds, that
// MetricWaitDuration advises to the SDK (a view may still override them).
// The default is DefaultWaitBuckets; no boundaries, or nil, keep it.
// Boundaries that are not finite and strictly increasing make NewObserver
// return an error.
func WithWaitBuckets(bounds ...float64) Option {
	return optionFunc(func(c *config) {
		for i, v := range bounds {
			if math.IsNaN(v) || math.IsInf(v, 0) || (i > 0 && v <= bounds[i-1]) {
				c.err = errors.New("headgate: telemetry: WithWaitBuckets: boundaries must be finite and strictly increasing")
				return
			}
		}
		if len(bounds) > 0 {
			c.waitBuckets = slices.Clone(bounds)
		}
	})
}
