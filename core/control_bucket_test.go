package core

import (
	"testing"
	"time"
)

// A server seen admitting more than twice its Limit within a window's
// length is a bucket (its Limit the burst), not a window counter: its
// refusal "Retry-After 2, reset 1 s" — a server pause begun just before a
// whole second, its end to the second rounded down (GitHub's epoch reset)
// and its Retry-After rounded up — is a pause, whose Retry-After is
// honoured in full without cutting the pace, and nothing goes into it; not
// a sliding window's turn a second before its wait ends (turnsFirst),
// which would probe into the pause just after the reset, and cut the pace
// at each probe refused.
func TestControlBucketRefusalTurnsNotFirst(t *testing.T) {
	c := newControl(DefaultAdaptive())
	var steps []ctlStep
	for i := range 25 { // 100/s against a Limit of 10 per second (its burst)
		at := time.Duration(i) * ctlInterval
		steps = append(steps, ctlStep{at: at + ms, sent: at, status: 200, h: quota("5", "10", "1")})
	}
	steps = append(steps, ctlStep{at: 251 * ms, sent: 250 * ms, status: 429, h: withRetryAfter(quota("0", "10", "1"), "2"),
		check: func(t *testing.T, c *control, v verdict) {
			if v.pause != int64(2251*ms) || v.probeAt != 0 || c.probe.armed || v.cut || !v.keepPlace {
				t.Errorf("verdict %+v, probe %+v: want a pause until the Retry-After (2.251s), no probe into it, no cut, the place kept", v, c.probe)
			}
		}})
	runCtl(t, &c, steps)
}
