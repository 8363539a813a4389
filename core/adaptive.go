package core

import "math"

// Adaptive tunes adaptive throttling: the pacing rate's response to
// refusals.
//
// It governs the pace only where the server reports no quota: a response
// that says what remains is read by the estimate of the quota instead
// (internal/quota), which paces by it. A refusal of such a server
// multiplies the effective rate by Decrease, never below MinRate × the
// configured rate; a refusal of a request sent before the last decrease
// does not decrease again, so one burst of refusals counts once. Recovery
// follows CUBIC: the rate climbs fast at first and flattens as it nears
// the rate that drew the decrease, which it reaches after the time a
// linear climb of Increase × the configured rate per second would take,
// and beyond it slowly, up to the configured rate. Other 5xx responses and
// transport errors change nothing. (A budget WithStore shares the factor
// with its fleet by the same rules, applied once across it: see
// internal/fleet.)
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
