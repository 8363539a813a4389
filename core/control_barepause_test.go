package core

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/core/ratelimit"
)

// A server pause that reports no quota — a Retry-After alone, as a proxy
// or a front that pauses a limiter says it — ends with the whole burst at
// once, even when the last report before it held the burst to what
// remained: a sliding window's Remaining 0 until its window's end, a
// second before the pause ends. The pause emptied the server's windows;
// the report ran out long before. Had that report's burst of one carried
// past the pause's end, the window the pause emptied would go at the pace:
// 1.11× the floor after the pause (httprate in the bench's
// matrix). Nothing goes faster than told.
func TestBatchBarePauseEndsWithTheBurst(t *testing.T) {
	for _, phase := range []time.Duration{500 * ms, 900 * ms} {
		t.Run(phase.String(), func(t *testing.T) { barePauseBatch(t, phase) })
	}
}

// barePauseBatch runs TestBatchBarePauseEndsWithTheBurst's batch, started
// phase into a window. At 0.5 s the pause comes mid-window, at the 166th
// call paced; at 0.9 s within the burst that the first window's end lets
// go, whose answers (admissions answered a millisecond later than
// refusals) come after the pause's first refusal, reporting little
// remaining until the window's end, long before the pause's.
func barePauseBatch(t *testing.T, phase time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		toYear2026()
		time.Sleep(phase)
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
			if status == http.StatusOK {
				time.Sleep(ms) // admissions answered a little later than refusals
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
	bare := ratelimit.Feedback{Remaining: -1, Limit: -1, Reset: -1, Pause: 2 * time.Second, Source: ratelimit.FromRetryAfter}
	for _, tc := range []struct {
		name        string
		f           ratelimit.Feedback
		reportUntil int64
		want        bool
	}{
		{"a Retry-After alone, the last report over before the pause ends", bare, 1 * s, true},
		{"the same, with no report", bare, 0, true},
		{"a report that runs past the pause's end", bare, 3 * s, false},
		{"a wait within the rounding", ratelimit.Feedback{Remaining: -1, Limit: -1, Reset: -1, Pause: time.Second, Source: ratelimit.FromRetryAfter}, 0, false},
		{"a pause that reports a quota", ratelimit.Feedback{Remaining: 0, Limit: 100, Reset: 2 * time.Second, Pause: 2 * time.Second}, 0, false},
	} {
		c := newController(Adaptive{}, DefaultMaxPause)
		c.shape.until = tc.reportUntil
		if got := c.barePause(tc.f, 2*s); got != tc.want {
			t.Errorf("%s: barePause = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A report that runs out before the server's pause ends shapes nothing:
// nothing goes until the pause ends, and a shape carried there would hold
// the burst that goes then to what the report said remained (answers from
// a burst the pause cut short, come after its first refusal). One that
// runs past the pause's end shapes the pace as ever.
func TestReportWithinAPauseShapesNothing(t *testing.T) {
	s := int64(time.Second)
	for _, tc := range []struct {
		reset string
		want  bool
	}{{"1", false}, {"3", true}} {
		c := newController(DefaultAdaptive(), DefaultMaxPause)
		p := pause{until: 2 * s}
		now := s / 10
		f := ratelimit.Parse(http.StatusOK, quota("3", "100", tc.reset), time.Date(2026, 1, 1, 0, 0, 0, int(now), time.UTC))
		c.apply(http.StatusOK, f, now, now, int64(10*ms), 100, false, &p)
		if got := c.shape.until > now; got != tc.want {
			t.Errorf("reset %s s, the pause until 2 s: shaped %v (%+v), want %v", tc.reset, got, c.shape, tc.want)
		}
	}
}
