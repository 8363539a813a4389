package core

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// A learning budget doubles its rate when two reports in a row, from
// requests sent one after the other, find the quota whole (a GCRA server
// stating its burst as its Limit refills faster than the pace). A fixed
// window that turns between the lone first call and the first call of
// the burst its answer sends looks whole to both, 0.5 ms apart (fiber's
// windows turn on its clock's tick, anywhere in a second): that shows no
// refill, and doubling there sends a second quota into the fresh window.
// Sent an interval of the pace apart, the same two reports still double.
func TestLearnedNoDoublingWithinABurst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report http.Header   // the quota whole but for the request itself
		gap    time.Duration // between the two requests' sends
		before float64       // the rate the first report teaches
		want   float64       // the rate after the second
	}{
		{"a window turned within the first burst", quota("99", "100", "1"), ms / 2, 100, 100},
		{"whole again an interval of the pace later", quota("9", "10", "1"), 100 * ms, 10, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, start := learnedFrom(t, tc.report)
				if got := b.Rate().PerSecondFloat(); got != tc.before {
					t.Fatalf("learned %v from the first report; want %v per second", b.Rate(), tc.before)
				}
				time.Sleep(tc.gap)
				b.Observe(200, tc.report, start.Add(tc.gap))
				if got := b.Rate().PerSecondFloat(); got != tc.want {
					t.Errorf("rate %v after the quota found whole again %v later; want %v per second", b.Rate(), tc.gap, tc.want)
				}
			})
		})
	}
}
