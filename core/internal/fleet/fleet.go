// Package fleet keeps the adaptive factor a Store shares across the
// budgets of a fleet (core's MemoryStore runs it; redisstore's report
// script is its port). It follows the rules of a budget's estimate
// (internal/quota, pace.go), applied once across the fleet. Its invariant:
// the factor stays in [MinRate, 1], and one burst of refusals lowers it
// once, whichever budget reports it.
package fleet

import (
	"math"

	"github.com/headgate-go/headgate/core/internal/quota"
)

// Adaptive is core.Adaptive's tuning, converted from it: the multiplier on
// a refusal, the floor, and the recovery speed.
type Adaptive struct {
	Decrease float64
	MinRate  float64
	Increase float64
}

// A Report is what Observe reads of core's store Report.
type Report struct {
	Status          int
	Refused         bool    // an adaptive decrease
	Factor, Plateau float64 // with Refused: the controller's cut and plateau; 0: a cut by Decrease
	Sent            int64   // when the request was sent, on the store's clock
	Room            bool    // the response shows room: Remaining not 0, or no quota reported
}

// A Factor is the fleet's adaptive factor. Observe changes it:
//
//   - a refusal the reporting budget's controller found above the
//     server's pace (Report.Refused) lowers the factor to the one that
//     controller decided (Report.Factor: its cut, or its ease to the pace
//     the server was seen keeping), and takes the plateau it named
//     (Report.Plateau, CUBIC's W_max) — unless its request was sent
//     before the last decrease (one burst of refusals counts once,
//     whichever budget reports it). It never raises the factor, but an
//     ease to the pace it already has (the server admitted all of it) still
//     restarts the recovery's clock from the plateau, as the
//     controller's ease does: the fleet does not climb on into refusals;
//   - a success (below 500, not a 429) of a request sent after the last
//     decrease grows it along the CUBIC curve from that decrease toward
//     the plateau (quota.Cubic), while the responses show room: the
//     curve's clock runs only between responses that do, so a fleet paced
//     at the server's rate, its quota reported spent, stays there; nor
//     does it run in the fleet's pause (nothing was sent to show room
//     then);
//   - anything else (a 429 the controller found no cut: a pause, a near
//     miss; other 5xx) changes nothing.
//
// A Report with Refused but no Factor (0) cuts by Adaptive.Decrease, with
// the factor before the cut as the plateau.
type Factor struct {
	factor       float64 // in [MinRate, 1]
	plateau      float64 // the factor to be careful near (CUBIC's W_max)
	lastDecrease int64   // when it was last decreased; math.MinInt64 for never
	grewAt       int64   // the last response that could grow it
	growing      int64   // time grown since the last decrease (CUBIC's t), ns
}

// New returns a factor of 1: no decrease yet.
func New() Factor {
	return Factor{factor: 1, plateau: 1, lastDecrease: math.MinInt64, grewAt: math.MinInt64}
}

// Value is the factor, in [MinRate, 1].
func (a *Factor) Value() float64 { return a.factor }

// Observe applies one report at now, the fleet's pause (before the
// report's) ending at paused, and reports whether the factor changed.
func (a *Factor) Observe(cfg Adaptive, r Report, now, paused int64) bool {
	switch {
	case r.Refused:
		if r.Sent < a.lastDecrease {
			return false
		}
		to, plateau := r.Factor, r.Plateau
		if !(to > 0 && to <= 1) {
			to = a.factor * cfg.Decrease
		}
		if !(plateau > 0 && plateau <= 1) {
			plateau = a.factor
		}
		old := a.factor
		a.factor = min(a.factor, max(cfg.MinRate, to))
		// The plateau is never above the factor the refusal found: a
		// budget whose mirror of the factor is stale (it took no turn
		// since the fleet was cut) decides from a pace the fleet no
		// longer runs, and its plateau would lift the recovery above it.
		a.plateau = max(a.factor, min(plateau, old))
		a.lastDecrease, a.grewAt, a.growing = now, now, 0
		return a.factor != old
	case r.Status < 500 && r.Status != 429 && a.factor < 1 && r.Sent > a.lastDecrease:
		if r.Room && now > a.grewAt {
			a.growing += now - max(a.grewAt, a.lastDecrease, min(paused, now))
		}
		a.grewAt = max(a.grewAt, now)
		if !r.Room {
			return false
		}
		w := quota.Cubic(a.plateau, cfg.Decrease, cfg.Increase, float64(a.growing)/1e9)
		if w <= a.factor {
			return false
		}
		a.factor = min(1, w)
		return true
	}
	return false
}

// Adopt takes factor f, another store's, at now: a lower one as a
// decrease from the factor before, its plateau.
func (a *Factor) Adopt(f float64, now int64) {
	if !(f > 0 && f <= 1) || f == a.factor {
		return
	}
	if f < a.factor {
		a.plateau = a.factor
		a.lastDecrease, a.grewAt, a.growing = now, now, 0
	}
	a.factor = f
}
