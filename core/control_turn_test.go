package core

import "testing"

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
