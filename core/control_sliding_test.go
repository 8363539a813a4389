package core

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// Told a sliding-window counter's exact rate, the budget draws no refusal
// once its quota, having read as windows, returned part of itself (a
// sliding window's, then): paced at exactly the rate the server states, a
// window whose window before counted less than its Limit refuses a call a
// hair early (the estimate climbs by the shortfall over the window), so
// the pace is trimmed by one request per window at once, not after that
// near miss (slidingTrim). Nothing arrives refused from the third window
// on, at any phase (untrimmed: one near miss in the third window).
func TestBatchSlidingWindowToldExactRateNoNearMiss(t *testing.T) {
	for _, s := range slidingStyles {
		for _, phase := range []time.Duration{0, 300 * ms, 700 * ms} {
			t.Run(fmt.Sprintf("%s/%v", s.name, phase), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(phase)
					time.Sleep(time.Until(start))
					bt := issueBatch(quotatest.Config{Algorithm: quotatest.SlidingWindow, Headers: s.headers})
					bt.told, bt.burst = PerSecond(100), 100
					r := runBatch(t, bt)
					var late []time.Duration
					for _, a := range r.arrivals {
						if a.Outcome != quotatest.Admitted && !a.At.Before(start.Truncate(time.Second).Add(2*time.Second)) {
							late = append(late, a.At.Sub(start))
						}
					}
					t.Logf("429s %d, makespan %v; refused from the third window on at %v", r.refused, r.makespan, late)
					if len(late) > 0 {
						t.Errorf("refused from the third window on at %v (after the start); want none", late)
					}
				})
			})
		}
	}
}
