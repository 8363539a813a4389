package fleet

import (
	"math"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/internal/quota"
)

var halve = Adaptive{Decrease: 0.5, MinRate: 0.1, Increase: 0.1}

// TestFactorRefusalCutsOnce: a refusal with no decided factor halves it;
// one sent before that decrease (the same burst) changes nothing; a
// decided factor below MinRate stops at MinRate.
func TestFactorRefusalCutsOnce(t *testing.T) {
	f := New()
	if !f.Observe(halve, Report{Status: 429, Refused: true, Sent: 0}, 0, math.MinInt64) || f.Value() != 0.5 {
		t.Fatalf("after a refusal the factor is %v, want 0.5", f.Value())
	}
	if f.Observe(halve, Report{Status: 429, Refused: true, Sent: -1}, 1, math.MinInt64) || f.Value() != 0.5 {
		t.Fatalf("a refusal sent before the decrease moved the factor to %v", f.Value())
	}
	f.Observe(halve, Report{Status: 429, Refused: true, Factor: 0.01, Sent: 2}, 2, math.MinInt64)
	if f.Value() != halve.MinRate {
		t.Fatalf("a cut to 0.01 left the factor at %v, want MinRate %v", f.Value(), halve.MinRate)
	}
}

// TestFactorGrowsOnlyWithRoom: successes after a decrease grow the factor
// along the CUBIC curve, its clock running only between responses that
// show room.
func TestFactorGrowsOnlyWithRoom(t *testing.T) {
	sec := int64(time.Second)
	f := New()
	f.Observe(halve, Report{Status: 429, Refused: true}, 0, math.MinInt64)
	if f.Observe(halve, Report{Status: 200, Sent: 1}, 2*sec, math.MinInt64) || f.Value() != 0.5 {
		t.Fatalf("a success showing no room moved the factor to %v", f.Value())
	}
	f.Observe(halve, Report{Status: 200, Sent: 1, Room: true}, 3*sec, math.MinInt64)
	if want := quota.Cubic(1, 0.5, 0.1, 1); f.Value() != want {
		t.Fatalf("after 1 s with room the factor is %v, want %v (the curve's clock ran while there was none)", f.Value(), want)
	}
}

// TestFactorAdopt: a lower factor from another store is a decrease; a
// factor out of (0, 1] is ignored.
func TestFactorAdopt(t *testing.T) {
	f := New()
	f.Adopt(0, 0)
	f.Adopt(0.3, 0)
	if f.Value() != 0.3 {
		t.Fatalf("adopted 0.3, factor %v", f.Value())
	}
	if f.Observe(halve, Report{Status: 429, Refused: true, Sent: -1}, 1, math.MinInt64) {
		t.Fatal("a refusal sent before the adopted decrease cut again")
	}
}
