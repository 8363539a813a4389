package core

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// A sliding window's refusals say "retry in 1 s" (httprate: always its
// whole window) with a reset at the window's end. The probe planned just
// after that reset reached the server a hair before the turned window's
// first call fits (1/L of a window after the turn, when the window before
// admitted L): refused, now with a reset a whole window away. One more
// probe goes an interval of the stated rate later, not the second's wait
// through the window that turned; refused again, the wait is honoured.
func TestControlProbeJustAfterTheTurnRefusedProbesOnce(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first = modelContinuous, -1 // a sliding window, past its first refusal
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("5", "100", "1")},
		{at: 11 * ms, sent: 10 * ms, status: 429, h: withRetryAfter(quota("0", "100", "0"), "1")},
		// The probe at the next turn: refused, the reset (rounded down) here.
		{at: 23 * ms, sent: 22 * ms, status: 429, h: withRetryAfter(quota("0", "100", "0"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if !c.probe.turn || v.probeAt != int64(33*ms) {
				t.Errorf("verdict %+v, probe %+v; want a probe just after the reset, at 33ms", v, c.probe)
			}
		}},
		// That probe: the window turned, and it was a hair early.
		{at: 34 * ms, sent: 33 * ms, status: 429, h: withRetryAfter(quota("0", "100", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.pause != 0 || v.probeAt != int64(44*ms) || v.holdUntil != int64(1034*ms) || !v.keepPlace {
				t.Errorf("verdict %+v; want no pause, one more probe at 44ms, the others held until 1.034s", v)
			}
		}},
		{at: 45 * ms, sent: 44 * ms, status: 429, h: withRetryAfter(quota("0", "100", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.pause != int64(1045*ms) {
				t.Errorf("verdict %+v; want the wait honoured, until 1.045s", v)
			}
		}},
	})
}

// After a window spent at once, a near miss a hair before a sliding
// window's turn arms a probe at the next paced turn, a hair after it:
// refused too, with a reset a whole window away (justTurned), the
// refusal may have come just as the window turned, and the wait it names
// would end just as the next one turns, the window between idle. It ends
// a stated interval sooner (nearTurnEarly) on whole-second resets of one
// second, which cannot say otherwise. An exact reset that names a
// mid-window end shows no turn at the refusal: the wait is honoured as it
// is. (One that names an end a whole window away shows the turn, and one
// more probe goes a stated interval after it: turnedSpent.) Nor is a wait
// at a pace above the stated rate ended early, nor an exact one shorter
// than the stated interval.
func TestControlNearMissProbeRefusedAtATurnEndsItsWaitEarly(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	unix := func(d time.Duration) string { return strconv.FormatInt(epoch.Add(d).Unix(), 10) }
	for _, tc := range []struct {
		name     string
		limit    string
		interval time.Duration // the configured pace's, within the stated rate
		at       time.Duration // the near miss's answer; its probe's is a paced turn on
		reset    func(at time.Duration) string
		early    time.Duration
	}{
		{"whole-second reset", "100", ctlInterval, 990 * ms, func(time.Duration) string { return "1" }, 10 * ms},
		{"exact reset, mid-window", "100", ctlInterval, 490 * ms, func(at time.Duration) string { return unix(at + 510*ms) }, 0},
		{"above the stated rate", "50", ctlInterval, 990 * ms, func(time.Duration) string { return "1" }, 0}, // 50 a second
		{"a millisecond wait", "100", ctlInterval, 990 * ms, func(time.Duration) string { return "1" }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newControl(DefaultAdaptive())
			c.model, c.kept.first = modelContinuous, -1 // a sliding window, past its first refusal
			c.kept.interval = int64(tc.interval)        // kept at the pace: the next refusal is a near miss
			observe := func(at time.Duration, status int, h http.Header) verdict {
				f := ratelimit.Parse(status, h, epoch.Add(at))
				return c.observe(observation{status: status, f: f, sent: int64(at - ms), now: int64(at), interval: int64(tc.interval), burst: 100})
			}
			observe(tc.at-10*ms, 200, quota("0", tc.limit, tc.reset(tc.at-10*ms)))
			v := observe(tc.at, 429, withRetryAfter(quota("0", tc.limit, tc.reset(tc.at)), "1"))
			if !c.probe.armed || !c.probe.near {
				t.Fatalf("verdict %+v, probe %+v: want a near miss's probe armed", v, c.probe)
			}
			c.probe.armed, c.probe.out, c.probe.sentAt = false, true, v.probeAt // the budget sends it
			probe := time.Duration(v.probeAt)
			wait := time.Second
			h := withRetryAfter(quota("0", tc.limit, tc.reset(probe+ms)), "1")
			if tc.name == "a millisecond wait" {
				wait = 5 * ms
				h.Set("Retry-After-Ms", "5")
			}
			v = observe(probe+ms, 429, h)
			stated := time.Second / time.Duration(c.last.limit)
			if early := int64(probe + ms + wait - tc.early); tc.early > 0 && (v.pause != early || v.probeAt != early) {
				t.Errorf("verdict %+v; want the wait and its probe until %v", v, time.Duration(early))
			} else if short := int64(probe + ms + wait - stated); tc.early == 0 && (v.pause == short || v.probeAt == short) {
				t.Errorf("verdict %+v; want the wait not ended a stated interval early, at %v", v, time.Duration(short))
			}
		})
	}
}
