package core

import (
	"math"

	"github.com/headgate-go/headgate/core/internal/quota"
)

// fleetFactor is the adaptive factor a Store shares across its fleet
// (MemoryStore runs it; redisstore's report script is its port). It
// follows the rules of a budget's estimate (internal/quota, pace.go), applied
// once across the fleet:
//
//   - a refusal the reporting budget's controller found above the
//     server's pace (Report.Refused) lowers the factor to the one that
//     controller decided (Report.Factor: its cut, or its ease to the pace
//     the server was seen keeping), and takes the plateau it named
//     (Report.Plateau, CUBIC's W_max) — unless its request was sent
//     before the last decrease (one burst of refusals counts once,
//     whichever budget reports it). It never raises the factor, but an
//     ease to the pace it already has (the server kept all of it) still
//     restarts the recovery's clock from the plateau, as the
//     controller's ease does: the fleet does not climb on into refusals;
//   - a success (below 500, not a 429) of a request sent after the last
//     decrease grows it along the CUBIC curve from that decrease toward
//     the plateau (cubic), while the responses show room: the curve's
//     clock runs only between responses that do (Remaining not 0, or no
//     quota reported), so a fleet paced at the server's rate, its quota
//     reported spent, stays there; nor does it run in the fleet's pause
//     (nothing was sent to show room then);
//   - anything else (a 429 the controller found no cut: a pause, a near
//     miss; other 5xx) changes nothing.
//
// A Report with Refused but no Factor (0) cuts by Adaptive.Decrease, with
// the factor before the cut as the plateau.
type fleetFactor struct {
	factor       float64 // in [MinRate, 1]
	plateau      float64 // the factor to be careful near (CUBIC's W_max)
	lastDecrease int64   // when it was last decreased; math.MinInt64 for never
	grewAt       int64   // the last response that could grow it
	growing      int64   // time grown since the last decrease (CUBIC's t), ns
}

func newFleetFactor() fleetFactor {
	return fleetFactor{factor: 1, plateau: 1, lastDecrease: math.MinInt64, grewAt: math.MinInt64}
}

// observe applies one report at now, the fleet's pause (before the
// report's) ending at paused, and reports whether the factor changed.
func (a *fleetFactor) observe(cfg Adaptive, r Report, now, paused int64) bool {
	if !cfg.Enabled() {
		return false
	}
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
		room := r.Remaining != 0 || r.Reset <= 0
		if room && now > a.grewAt {
			a.growing += now - max(a.grewAt, a.lastDecrease, min(paused, now))
		}
		a.grewAt = max(a.grewAt, now)
		if !room {
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

// adopt takes factor f, another store's (MemoryStore.Adopt), at now: a
// lower one as a decrease from the factor before, its plateau.
func (a *fleetFactor) adopt(f float64, now int64) {
	if !(f > 0 && f <= 1) || f == a.factor {
		return
	}
	if f < a.factor {
		a.plateau = a.factor
		a.lastDecrease, a.grewAt, a.growing = now, now, 0
	}
	a.factor = f
}
