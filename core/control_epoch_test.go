package core

import "testing"

// epochSecond is runCtl's epoch plus one second, as a Unix reset: at
// 985 ms, GitHub's epoch reset for "whole at 1 s or later" (rounded down).
const epochSecond = "1767225601"

// A reset to the second read against a finer clock may be rounded down: a
// GCRA server whose burst of 10 returns in 100 ms, spent at 0.985 s, reports
// its quota whole at "1 s", 15 ms away, and refuses the probe at the next
// paced turn with "Retry-After 1". Read as windows, the budget would wait
// out that second for every burst of ten; instead one probe tries the
// window's end the reset names, three paced intervals after it, and the
// part of the quota it finds back shows a bucket.
func TestControlEpochResetRoundedDownProbesTheNamedEnd(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 985 * ms, sent: 985 * ms, status: 200, h: quota("0", "10", epochSecond)},
		{at: 995 * ms, sent: 995 * ms, status: 429, h: withRetryAfter(quota("0", "10", epochSecond), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.probeAt != int64(1030*ms) || v.holdUntil != int64(1995*ms) || v.pause != 0 || !v.keepPlace {
				t.Errorf("verdict %+v: want one probe at the named end plus three paced intervals (1.03s), the others held until the Retry-After (1.995s), no pause", v)
			}
		}},
		{at: 1031 * ms, sent: 1030 * ms, status: 200, h: quota("1", "10", "1767225602"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelContinuous || !v.release {
				t.Errorf("verdict %+v, model %d: want continuous, the hold released", v, c.model)
			}
		}},
	})
}

// The same refusal from a fixed window: the probe at its named end finds
// the whole quota back, and windows stay.
func TestControlEpochResetWindowTurnedStaysWindowed(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 985 * ms, sent: 985 * ms, status: 200, h: quota("0", "100", epochSecond)},
		{at: 995 * ms, sent: 995 * ms, status: 429, h: withRetryAfter(quota("0", "100", epochSecond), "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelWindowed || v.probeAt != int64(1030*ms) {
				t.Errorf("verdict %+v, model %d: want windows, one probe at 1.03s", v, c.model)
			}
		}},
		{at: 1031 * ms, sent: 1030 * ms, status: 200, h: quota("99", "100", "1767225602"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelWindowed || !v.release {
				t.Errorf("verdict %+v, model %d: want windows still, the hold released", v, c.model)
			}
		}},
	})
}
