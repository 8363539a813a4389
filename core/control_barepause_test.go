package core

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// A server pause that reports no quota — a Retry-After alone, as a proxy
// or a front that pauses a limiter says it — ends with the whole burst at
// once, even when the last report before it held the burst to what
// remained: a sliding window's Remaining 0 until its window's end, a
// second before the pause ends. The pause emptied the server's windows;
// the report ran out long before. Had that report's burst of one carried
// past the pause's end, the window the pause emptied would go at the pace:
// 1.11× the least makespan after the pause (httprate in the bench's
// matrix). Nothing goes faster than told.
func TestBatchBarePauseEndsWithTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toYear2026()
		time.Sleep(500 * ms) // mid-window: the pause comes mid-window too
		bt := issueBatch(quotatest.Config{Algorithm: quotatest.SlidingWindow,
			Headers: quotatest.XRateLimitEpoch | quotatest.ResetRoundedDown | quotatest.RetryAfterSeconds})
		bt.told, bt.burst = PerSecond(100), 100
		bt.pauseAdmitted, bt.pause = 166, 2*time.Second
		bt.answer = func(h http.Header, status int) {
			if status == http.StatusTooManyRequests && h.Get("Retry-After") == "2" { // the pause's: no quota
				for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
					h.Del(k)
				}
			}
		}
		r := runBatch(t, bt)
		if r.pauseAt.IsZero() {
			t.Fatal("the server never paused")
		}
		end := r.pauseAt.Add(bt.pause)
		if n := r.admittedBefore(end.Add(50*ms), end); n < 90 {
			t.Errorf("%d admitted in the 50 ms after the pause's end, want the window it emptied (100) at once", n)
		}
		if err := quotatest.CheckTimes(sortedTimes(r.arrivals), bt.burst, bt.told.Interval(), 0); err != nil {
			t.Errorf("sent faster than told: %v", err)
		}
		t.Logf("429s %d, makespan %v, pause %v–%v", r.refused, r.makespan, r.pauseAt.Sub(r.pauseAt.Truncate(time.Second)), end.Sub(r.pauseAt.Truncate(time.Second)))
	})
}

// A bare pause is one that reports no quota, longer than the rounding,
// with no quota report running past its end: a report whose reset comes
// later says part of the quota is still spent then.
func TestBarePause(t *testing.T) {
	s := int64(time.Second)
	bare := Feedback{Remaining: -1, Limit: -1, Reset: -1, Pause: 2 * time.Second, Source: FromRetryAfter}
	for _, tc := range []struct {
		name        string
		f           Feedback
		reportUntil int64
		want        bool
	}{
		{"a Retry-After alone, the last report over before the pause ends", bare, 1 * s, true},
		{"the same, with no report", bare, 0, true},
		{"a report that runs past the pause's end", bare, 3 * s, false},
		{"a wait within the rounding", Feedback{Remaining: -1, Limit: -1, Reset: -1, Pause: time.Second, Source: FromRetryAfter}, 0, false},
		{"a pause that reports a quota", Feedback{Remaining: 0, Limit: 100, Reset: 2 * time.Second, Pause: 2 * time.Second}, 0, false},
	} {
		c := newController(Adaptive{}, DefaultMaxPause)
		c.shape.until = tc.reportUntil
		if got := c.barePause(tc.f, 2*s); got != tc.want {
			t.Errorf("%s: barePause = %v, want %v", tc.name, got, tc.want)
		}
	}
}
