package core

import (
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// epochSecond is runCtl's epoch plus one second, as a Unix reset: at
// 985 ms, GitHub's epoch reset for "whole at 1 s or later" (rounded down).
const epochSecond = "1767225601"

// spentBeforeASecond is the refusal that shows windows, a hair before a
// whole second: the last token spent at 985 ms with the reset named at
// 1 s, and the probe at the next paced turn refused with "Retry-After 1"
// — a quota of limit that a continuous server would have refilled a token
// of by then.
func spentBeforeASecond(limit string, check func(t *testing.T, c *control, v verdict)) []ctlStep {
	return []ctlStep{
		{at: 985 * ms, sent: 985 * ms, status: 200, h: quota("0", limit, epochSecond)},
		{at: 995 * ms, sent: 995 * ms, status: 429, h: withRetryAfter(quota("0", limit, epochSecond), "1"), check: check},
	}
}

// A GCRA server of burst 10 at 50/s, told 100/s, spent at 0.985 s: whole
// at 1.185 s, its reset rounded down reads "1 s", 15 ms away, and it
// refuses the probe at the next paced turn. Read as windows, the budget
// would wait out a Retry-After for every burst of ten (9.8× the ideal for
// the matrix's GitHub-style GCRA told 2× at 990 ms); instead one probe
// tries the end the reset names, three paced intervals after it, and the
// part of the quota it finds back shows a bucket.
func TestControlRoundedDownResetProbesTheNamedEnd(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, append(spentBeforeASecond("10", func(t *testing.T, c *control, v verdict) {
		if c.model != modelWindowed || v.probeAt != int64(1030*ms) || v.holdUntil != int64(2995*ms) || v.pause != 0 || !v.keepPlace {
			t.Errorf("verdict %+v, model %d: want windows for now, one probe at the named end plus three paced intervals (1.03 s), the others held as windowWait holds them (2.995 s), no pause", v, c.model)
		}
	}), ctlStep{at: 1031 * ms, sent: 1030 * ms, status: 200, h: quota("1", "10", "1767225602"), check: func(t *testing.T, c *control, v verdict) {
		if c.model != modelContinuous || !v.release {
			t.Errorf("verdict %+v, model %d: want continuous, the hold released", v, c.model)
		}
	}}))
}

// The same refusal from a fixed window of 10 a second: the probe at its
// named end finds the whole quota back, and windows stay.
func TestControlRoundedDownResetWindowTurnedStaysWindowed(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, append(spentBeforeASecond("10", nil),
		ctlStep{at: 1031 * ms, sent: 1030 * ms, status: 200, h: quota("9", "10", "1767225602"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelWindowed || !v.release {
				t.Errorf("verdict %+v, model %d: want windows still, the hold released", v, c.model)
			}
		}}))
}

// A sliding window whose reset is rounded down too (httprate's) turns up
// to a second past the end it names, and refuses every call before: the
// probe of the named end refused, the wait is windowWait's — one probe at
// the Retry-After's end — not a probe every interval of the stated rate
// (the reset now reads 0: the named end seems to come first, turnsFirst),
// each refused, until the window turns.
func TestControlRoundedDownResetNamedEndRefusedWaitsAsWindows(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, append(spentBeforeASecond("10", nil),
		ctlStep{at: 1031 * ms, sent: 1030 * ms, status: 429, h: withRetryAfter(quota("0", "10", epochSecond), "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelWindowed || v.probeAt != int64(1995*ms) || v.holdUntil != int64(2995*ms) || v.pause != 0 || !v.keepPlace || v.cut {
				t.Errorf("verdict %+v, model %d: want windows, one probe at the first refusal's Retry-After end (1.995 s), the others held until 2.995 s, no cut", v, c.model)
			}
		}}))
}

// At a pace within the rate the server states (100 a second, paced at
// 100/s) the refusal is no bucket's — one whose Limit returns within the
// second admits that pace — but a window counter's, whose named end is no
// evidence: the wait is windowWait's, with no probe before it.
func TestControlRoundedDownResetWithinStatedRateWaits(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, spentBeforeASecond("100", func(t *testing.T, c *control, v verdict) {
		if c.model != modelWindowed || v.probeAt != int64(1995*ms) || v.holdUntil != int64(2995*ms) {
			t.Errorf("verdict %+v, model %d: want windows, one probe at the Retry-After's end (1.995 s), the others held until 2.995 s", v, c.model)
		}
	}))
}

// httprate's windows turn where its limiter was built, here 685 ms past
// each second, and each names its end as an epoch second rounded down: the
// window [1.685 s, 2.685 s) names 2 s, and its reset reads passed (0) from
// 2 s until it turns. The response that first names the next end (3 s,
// a reset 1.309 s away) shows the turn came by its arrival, and every
// turn after it a whole window on.
func httprateTurnSeen() []ctlStep {
	return []ctlStep{
		{at: 701 * ms, sent: 700 * ms, status: 200, h: quota("40", "100", "1767225601")},
		{at: 1681 * ms, sent: 1680 * ms, status: 200, h: quota("1", "100", "1767225601")}, // passed
		{at: 1691 * ms, sent: 1690 * ms, status: 200, h: quota("9", "100", "1767225602")}, // the window turned
	}
}

// The window spent at 3.6 s (it turns at 3.685 s, its reset read passed
// since 3 s): the refusal's probe (the near miss's, a paced interval after
// it) is refused, and so is the probe just after the reset that seemed to
// come (turnsFirst); with the reset still passed, one probe goes next a
// stated interval after the turn the named ends predict (3.691 s + 10 ms)
// — not at the refusal's wait a second on — the others held until that
// wait ends, the pace not cut; refused there too, the wait is honoured,
// and the refused call's retry goes alone when it ends: what the window
// counter has had back since its turn is in its answer.
func TestControlPassedResetProbesThePredictedTurn(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first = modelContinuous, -1 // a sliding window, past its first refusal
	refusal := withRetryAfter(quota("0", "100", "1767225603"), "1")
	const nearProbe = 3611*ms + 101010 // a paced interval at 0.99 after the near miss
	runCtl(t, &c, append(httprateTurnSeen(),
		ctlStep{at: 3601 * ms, sent: 3600 * ms, status: 429, h: refusal}, // a near miss: its probe goes a paced interval on
		ctlStep{at: 3612 * ms, sent: nearProbe, status: 429, h: refusal}, // a probe just after the reset (reads 0) follows
		ctlStep{at: 3623 * ms, sent: 3622 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if v.pause != 0 || v.probeAt != int64(3701*ms) || v.holdUntil != int64(4623*ms) || !v.keepPlace || !c.probe.passed || v.cut {
				t.Errorf("verdict %+v, probe %+v: want one probe at the predicted turn plus a stated interval (3.701 s), the others held until 4.623 s, no cut", v, c.probe)
			}
		}},
		ctlStep{at: 3702 * ms, sent: 3701 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if v.pause != int64(4702*ms) || v.probeAt != int64(4702*ms) || v.allow != 1 {
				t.Errorf("verdict %+v: want the wait honoured, until 4.702 s, and then one probe alone (its answer's Remaining released)", v)
			}
		}},
	))
}

// A GCRA bucket of 10 whose reset is an epoch second rounded down
// (GitHub-style, its Limit the burst): refilled within a tenth of a
// second, its reset reads passed (0) on every response. Told 1.5× and 2×
// its rate, the probe after the first burst's near miss is refused for
// the pace, not for a window whose named end passed: read as a window's
// passed reset (a refusal's wait honoured whole whenever no end was
// named), the batch idled a second, 1.21–1.31× the ideal at most phases.
func TestBatchGitHubBucketToldAboveItsRate(t *testing.T) {
	for _, told := range []int{150, 200} {
		for _, phase := range []time.Duration{0, 300 * time.Millisecond, 700 * time.Millisecond} {
			t.Run(fmt.Sprintf("%d/s/%v", told, phase), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(phase)))
					bt := issueBatch(quotatest.Config{Burst: 10, Headers: quotatest.XRateLimitEpoch | quotatest.ResetRoundedDown | quotatest.RetryAfterSeconds})
					bt.told, bt.burst = PerSecond(told), told/10
					r := runBatch(t, bt)
					x := float64(r.makespan) / float64(bt.ideal())
					t.Logf("429s %d, makespan %v = %.3f× the ideal", r.refused, r.makespan, x)
					if x > 1.05 {
						t.Errorf("told %d/s: %.3f× the ideal, want ≤ 1.05×", told, x)
					}
				})
			})
		}
	}
}

// A delta reset rounded up to the second ("1 s" all through a 1 s window)
// names an end that creeps with the clock: two reports 600 ms apart name
// ends 600 ms apart with no turn between them. Only reports less than half
// a window apart pin a turn; an epoch reset that names the next window's
// end pins it at its report's arrival.
func TestNamedEndsPinOnlyCloseReports(t *testing.T) {
	const w = int64(time.Second)
	var n namedEnds
	n.observe(0, int64(1*ms), w, w)
	n.observe(int64(600*ms), int64(601*ms), w, w)
	if n.turnBy != 0 {
		t.Errorf("turn pinned at %v by reports 600 ms apart; want none", time.Duration(n.turnBy))
	}
	n = namedEnds{} // epoch resets: the window's end at 1 s, then the next one's at 2 s
	n.observe(int64(400*ms), int64(401*ms), w-int64(401*ms), w)
	n.observe(int64(610*ms), int64(611*ms), 2*w-int64(611*ms), w)
	if n.turnBy != int64(611*ms) {
		t.Errorf("turn pinned at %v; want 611ms, the arrival of the report that named the next end", time.Duration(n.turnBy))
	}
}

// httprate begun mid-window (a limiter that has run a while): its window
// [0.685 s, 1.685 s) names its end as 1 s, read passed by the batch that
// spends it at 1.185 s. The near miss's probe refused too, at 100/s — no
// more than the Limit of 100 a second, which no bucket whose reset reads
// passed refuses (it refills faster) — and with no window length known
// yet (no reset has read more than 0): the window ran out, not the pace.
// The pace is not cut, and no probe goes "just after the reset" (passed:
// it would be the next paced call, refused again); the refusal's wait is
// honoured, and its end probed alone: the answer's Remaining, what the
// counter has had back since its turn, goes at once.
func TestControlPassedResetWithinTheLimitPerSecondWaitsUncut(t *testing.T) {
	c := newControl(DefaultAdaptive())
	refusal := withRetryAfter(quota("0", "100", "1767225601"), "1")
	var steps []ctlStep
	for rem := 9; rem >= 0; rem-- { // the burst the budget was told, all admitted
		steps = append(steps, ctlStep{at: 1186 * ms, sent: 1185 * ms, status: 200, h: quota(strconv.Itoa(rem), "100", "1767225601")})
	}
	runCtl(t, &c, append(steps,
		ctlStep{at: 1196 * ms, sent: 1195 * ms, status: 429, h: refusal}, // a near miss: its probe goes a paced interval on
		ctlStep{at: 1207 * ms, sent: 1206 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if v.cut || c.factor != 1 || v.pause != int64(2207*ms) || v.probeAt != int64(2207*ms) || v.allow != 1 {
				t.Errorf("verdict %+v, factor %.3f: want no cut, the wait honoured until 2.207 s and one probe alone then", v, c.factor)
			}
		}},
		ctlStep{at: 2208 * ms, sent: 2207 * ms, status: 200, h: quota("53", "100", "1767225602"), check: func(t *testing.T, c *control, v verdict) {
			if !v.release || v.remaining != 53 {
				t.Errorf("verdict %+v: want the 53 the answer reports released at once", v)
			}
		}},
	))
}
