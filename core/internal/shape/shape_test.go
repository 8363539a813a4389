package shape

import (
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// TestOf: what remains and what returns before the reset, spread over the
// reset less its rounding second, the burst what remains, the reset cut to
// maxPause; no shape without a known Remaining and Reset.
func TestOf(t *testing.T) {
	sec := int64(time.Second)
	p, ok := Of(ratelimit.Feedback{Remaining: 10, Limit: 100, Reset: 11 * time.Second}, 5, time.Hour)
	if want := (Pace{Interval: 10 * sec / 100, Burst: 10, Until: 5 + 11*sec}); !ok || p != want {
		t.Fatalf("Of = %+v, %v; want %+v", p, ok, want)
	}
	if p, _ := Of(ratelimit.Feedback{Remaining: 2, Limit: -1, Reset: time.Hour}, 0, 3*time.Second); p.Until != 3*sec || p.Interval != sec {
		t.Fatalf("a reset past maxPause: %+v, want it cut to 3 s", p)
	}
	for _, f := range []ratelimit.Feedback{{Remaining: -1, Reset: time.Second}, {Remaining: 5}, {Remaining: 0, Limit: 0, Reset: time.Second}} {
		if _, ok := Of(f, 0, time.Hour); ok {
			t.Errorf("Of(%+v) shaped the pace", f)
		}
	}
}

// TestSlow: a shape slows the pace until its end, never to a burst below 1,
// and never speeds it up.
func TestSlow(t *testing.T) {
	p := Pace{Interval: 100, Burst: 0, Until: 10}
	if iv, b := p.Slow(5, 10, 5); iv != 100 || b != 1 {
		t.Fatalf("Slow before the end = %d, %d; want 100, 1", iv, b)
	}
	if iv, b := p.Slow(5, 1000, 5); iv != 1000 || b != 1 {
		t.Fatalf("Slow of a slower pace = %d, %d; want 1000, 1", iv, b)
	}
	if iv, b := p.Slow(10, 10, 5); iv != 10 || b != 5 {
		t.Fatalf("Slow at the end = %d, %d; want 10, 5", iv, b)
	}
}
