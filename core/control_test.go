package core

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// ctlStep is one response fed to a controller, and what must follow.
type ctlStep struct {
	at, sent time.Duration // when the response comes, when its request was sent
	status   int
	h        http.Header
	check    func(t *testing.T, c *control, v verdict)
}

const ctlInterval = 10 * time.Millisecond // the configured pace: 100/s, burst 10

func runCtl(t *testing.T, c *control, steps []ctlStep) {
	t.Helper()
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range steps {
		f := ratelimit.Parse(s.status, s.h, epoch.Add(s.at))
		v := c.observe(observation{status: s.status, f: f, sent: int64(s.sent), now: int64(s.at),
			interval: int64(ctlInterval), burst: 10})
		if c.probe.armed { // the budget sends the probe at its turn
			c.probe = probe{out: true, sentAt: v.probeAt, holdUntil: c.probe.holdUntil, refillAt: c.probe.refillAt, turn: c.probe.turn, named: c.probe.named, passed: c.probe.passed, near: c.probe.near}
		}
		t.Run("", func(t *testing.T) {
			t.Helper()
			if s.check != nil {
				t.Logf("step %d: %d %v at %v (sent %v): verdict %+v, model %d, factor %.3f", i, s.status, s.h, s.at, s.sent, v, c.model, c.factor)
				s.check(t, c, v)
			}
		})
	}
}

func quota(rem, limit, reset string) http.Header {
	return http.Header{"X-Ratelimit-Remaining": {rem}, "X-Ratelimit-Limit": {limit}, "X-Ratelimit-Reset": {reset}}
}

func withRetryAfter(h http.Header, s string) http.Header {
	h = h.Clone()
	h.Set("Retry-After", s)
	return h
}

const ms = time.Millisecond

// A 200 that spends the last token pauses nobody until the reset while the
// model is unknown: one probe goes at the next paced turn, the rest are held
// until its answer (or the reset). Part of the quota back: continuous, and
// from then on a spent 200 changes nothing.
func TestControlSpentSuccessProbesThenLearnsContinuous(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.pause != 0 || v.probeAt != int64(11*ms) || v.holdUntil != int64(1001*ms) || v.cut {
				t.Errorf("verdict %+v, want a probe at 11ms, the rest held until 1.001s, no pause, no cut", v)
			}
		}},
		{at: 12 * ms, sent: 11 * ms, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if !v.release || c.model != modelContinuous {
				t.Errorf("verdict %+v, model %d: want the hold released and the model continuous", v, c.model)
			}
		}},
		{at: 22 * ms, sent: 21 * ms, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v != (verdict{}) {
				t.Errorf("verdict %+v on a continuous server, want nothing", v)
			}
		}},
	})
}

// The probe refused with a wait, when a continuous server would surely have
// returned a token (Reset/Limit after the report), shows windows: the wait
// is honoured, and the pace is not cut (a window ran out, the pace is not
// at fault). Refused sooner, it proves nothing: one more probe goes when
// it would be (see TestControlEarlyRefusedProbeProbesAgain). The wait's
// probe goes a stated interval before its end: a whole-second reset may
// name a sliding window that turned at the refusal, whose last instant has
// nearly all its quota back (windowWait).
func TestControlRefusedProbeLearnsWindowed(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("0", "100", "1")},
		{at: 12 * ms, sent: 11 * ms, status: 429, h: withRetryAfter(quota("0", "100", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelWindowed || v.probeAt != int64(1002*ms) || v.cut || c.factor != 1 || !v.keepPlace {
				t.Errorf("verdict %+v, model %d, factor %v: want windowed, a probe a stated interval before the wait's end (1.002s) kept for the caller, no cut", v, c.model, c.factor)
			}
		}},
		// The probe finds the whole quota back: windows stay, the hold
		// ends, and the turn is seen.
		{at: 1003 * ms, sent: 1002 * ms, status: 200, h: quota("99", "100", "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelWindowed || !v.release {
				t.Errorf("verdict %+v, model %d: want the hold released, still windowed", v, c.model)
			}
		}},
		// The next spent 200 waits for the window's end the turn predicts
		// (2.003s), sooner than its reset rounded up (2.5s), where one probe
		// finds whether it turned.
		{at: 1500 * ms, sent: 1499 * ms, status: 200, h: quota("0", "100", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.pause != 0 || v.probeAt != int64(2003*ms) {
				t.Errorf("verdict %+v, want a probe at the predicted window end (2.003s)", v)
			}
		}},
	})
}

func TestControlEarlyRefusedProbeProbesAgain(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("0", "10", "1")}, // a token every 100ms at worst
		{at: 12 * ms, sent: 11 * ms, status: 429, h: withRetryAfter(quota("0", "10", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelUnknown || v.probeAt != int64(101*ms) || !v.cut || v.pause != 0 {
				t.Errorf("verdict %+v, model %d: want a second probe at 101ms, the pace cut, no pause, the model unknown", v, c.model)
			}
		}},
		{at: 102 * ms, sent: 101 * ms, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.model != modelContinuous || !v.release {
				t.Errorf("verdict %+v, model %d: want continuous, released", v, c.model)
			}
		}},
	})
}

// A whole-second Retry-After is a coarse bound: a refusal that shows the
// pace too fast cuts it and holds the callers until the bound, but one probe
// goes at the next turn of the new pace.
func TestControlCoarseRetryAfterProbesAtThePace(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first = modelContinuous, -1 // past its first refusal
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 429, h: withRetryAfter(quota("0", "10", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if !v.cut || c.factor != 0.5 || v.probeAt != int64(21*ms) || v.holdUntil != int64(1001*ms) {
				t.Errorf("verdict %+v, factor %v: want a cut to 0.5, a probe at 21ms (the halved pace), the rest held to 1.001s", v, c.factor)
			}
		}},
		// Refused too: the wait was real; honoured in full. Sent after the
		// cut, it cuts again.
		{at: 22 * ms, sent: 21 * ms, status: 429, h: withRetryAfter(quota("0", "10", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.pause != int64(1022*ms) || c.factor != 0.25 {
				t.Errorf("verdict %+v, factor %v: want the full second honoured and a second cut", v, c.factor)
			}
		}},
	})
}

// A refusal that only says "pause" (a wait longer than the rounding, the
// quota whole after it) does not cut the pace; one whose quota returns only
// after the wait ends does.
func TestControlPauseOnlyRefusalDoesNotCut(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 429, h: withRetryAfter(quota("0", "10", "2"), "2"), check: func(t *testing.T, c *control, v verdict) {
			if v.cut || c.factor != 1 || v.pause != int64(2001*ms) || v.allow != 10 {
				t.Errorf("verdict %+v, factor %v: want a 2s pause ending with the whole quota, no cut", v, c.factor)
			}
		}},
		{at: 3 * time.Second, sent: 2999 * ms, status: 429, h: withRetryAfter(quota("0", "10", "5"), "2"), check: func(t *testing.T, c *control, v verdict) {
			if !v.cut || c.factor != 0.5 {
				t.Errorf("verdict %+v, factor %v: the quota returns after the wait: want a cut", v, c.factor)
			}
		}},
	})
}

// A burst leaves over a few ms on a loaded machine and reaches the server
// in another order: the request that spent the last token may be one sent
// before the freshest report's. Answered after that report, which left one
// token, and sent within a paced interval before it, its spent quota arms
// the probe all the same (spentAfter) — read as stale, the first paced
// call after the burst went unprobed, refused as a near miss, and its
// probe was a second refusal — and the freshest report stays the
// freshest.
func TestControlBurstSpentOutOfOrderArmsTheProbe(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 13 * ms, sent: 12 * ms, status: 200, h: quota("1", "100", "1")},
		{at: 14 * ms, sent: 10 * ms, status: 200, h: quota("0", "100", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.probeAt != int64(14*ms+ctlInterval) || v.holdUntil != int64(1014*ms) || c.last.sent != int64(12*ms) {
				t.Errorf("verdict %+v, last report %+v: want a probe at 24ms, the rest held until 1.014s, the report sent at 12ms still the freshest", v, c.last)
			}
		}},
	})
}

// Reports are ordered by their request's send time: a spent quota reported
// for a request sent before the freshest report does not hold anyone.
func TestControlEarlierReportNeverOverridesLater(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 5 * ms, sent: 4 * ms, status: 200, h: quota("6", "10", "1")},
		{at: 6 * ms, sent: 1 * ms, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.probeAt != 0 || v.pause != 0 || c.last.remaining != 6 {
				t.Errorf("verdict %+v, last report %+v: a stale report must not override the fresh one", v, c.last)
			}
		}},
		// Sent at the same instant, the one reporting less is the fresher.
		{at: 7 * ms, sent: 4 * ms, status: 200, h: quota("5", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.last.remaining != 5 {
				t.Errorf("last report %+v, want the one with 5 remaining", c.last)
			}
		}},
	})
}

// Recovery never climbs while the server reports its last token spent: the
// pace is already the server's.
func TestControlRecoveryWaitsForRoom(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model = modelContinuous
	runCtl(t, &c, []ctlStep{
		{at: 0, sent: 0, status: 503},
		{at: 2 * time.Second, sent: 1999 * ms, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.factor != 0.5 || v.grew {
				t.Errorf("factor %v after 2s of spent quota, want 0.5 (no room reported)", c.factor)
			}
		}},
		{at: 3 * time.Second, sent: 2999 * ms, status: 200, h: quota("4", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			// Room for 1 s of growth since the last response: W(1s).
			if want := cubic(1, 0.5, 0.1, 1); c.factor != want {
				t.Errorf("factor %v, want %v: one second of growth, the time without room does not count", c.factor, want)
			}
		}},
	})
}

// A window seen turning pins the later ends: a window spent part way
// through waits for its predicted end, not for the reset rounded up. The
// others are held until the probe's answer, a second past the probe should
// none come: not only to the reset bound, which may come before the answer
// does (control_windowwait_test.go).
func TestControlWindowTurnPredictsTheEnd(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model = modelWindowed
	runCtl(t, &c, []ctlStep{
		{at: 991 * ms, sent: 990 * ms, status: 200, h: quota("3", "100", "1")},
		{at: 1001 * ms, sent: 1000 * ms, status: 200, h: quota("99", "100", "1")}, // it turned by 1.001s
		{at: 1301 * ms, sent: 1300 * ms, status: 200, h: quota("0", "100", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.probeAt != int64(2001*ms) || v.holdUntil != int64(3001*ms) {
				t.Errorf("verdict %+v, want a probe at the predicted end 2.001s, the rest held a second past it, 3.001s", v)
			}
		}},
	})
}

// Requests sent within a round trip of each other (at least a
// millisecond) may be decided in either order: of two such reports, the
// one that says less remains is the fresher, whatever their send order.
func TestControlConcurrentSendsOrderedByRemaining(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 2 * ms, sent: 1 * ms, status: 200, h: quota("3", "10", "1")},
		{at: 2100 * time.Microsecond, sent: 500 * time.Microsecond, status: 200, h: quota("2", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.last.remaining != 2 {
				t.Errorf("last report %+v, want the one with 2 remaining (sent 0.5ms before the other, decided after it)", c.last)
			}
		}},
	})
}

// A quota that drains between two fresh reports shows the pace above the
// server's: growth stops there, and CUBIC's plateau moves to that pace.
func TestControlDrainingQuotaStopsGrowth(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model = modelContinuous
	var grown float64
	runCtl(t, &c, []ctlStep{
		{at: 0, sent: 0, status: 503},
		{at: time.Second, sent: 999 * ms, status: 200, h: quota("5", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			grown = c.factor
			if !v.grew {
				t.Errorf("factor %v: want growth while 5 of 10 remain", c.factor)
			}
		}},
		{at: 2 * time.Second, sent: 1999 * ms, status: 200, h: quota("4", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.grew || c.factor != grown || c.failed != grown {
				t.Errorf("factor %v (was %v), plateau %v: want no growth and the plateau at the draining pace", c.factor, grown, c.failed)
			}
		}},
	})
}

// On a continuous server, a refusal while the pace (100/s) is within the
// rate the server states (Limit per reset's whole second) is a near miss:
// one probe goes at the next paced turn, the pace is not cut. Stated below
// the pace — told twice the rate, or a GCRA server whose Limit is its
// burst of 10 — the refusal shows the pace above the server's, and cuts.
func TestControlRefusalWithinStatedRateDoesNotCut(t *testing.T) {
	for _, s := range []struct {
		limit string
		cut   bool
	}{{"100", false}, {"150", false}, {"50", true}, {"10", true}} {
		t.Run("Limit "+s.limit, func(t *testing.T) {
			c := newControl(DefaultAdaptive())
			c.model, c.kept.first = modelContinuous, -1 // past its first refusal
			runCtl(t, &c, []ctlStep{
				{at: 1 * ms, sent: 0, status: 200, h: quota("5", s.limit, "1")},
				{at: 11 * ms, sent: 10 * ms, status: 429, h: withRetryAfter(quota("0", s.limit, "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
					if v.cut != s.cut || v.probeAt != int64(11*ms)+c.paced(int64(ctlInterval)) || v.holdUntil != int64(1011*ms) {
						t.Errorf("verdict %+v, want cut %v, a probe at the next paced turn, the rest held until 1.011s", v, s.cut)
					}
				}},
			})
		})
	}
}

// A server pause's reset (2 s here) says when the pause ends, not how long
// the server's window is: the rate the server states stays Limit per 1 s,
// and a near miss after the pause cuts nothing.
func TestControlPauseResetIsNoWindow(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model = modelContinuous
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("5", "100", "1")},
		{at: 11 * ms, sent: 10 * ms, status: 429, h: withRetryAfter(quota("0", "100", "2"), "2"), check: func(t *testing.T, c *control, v verdict) {
			if v.cut || v.pause != int64(2011*ms) {
				t.Errorf("verdict %+v, want a pause until 2.011s, no cut", v)
			}
		}},
		{at: 2021 * ms, sent: 2020 * ms, status: 429, h: withRetryAfter(quota("0", "100", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.cut || c.factor != 0.99 || v.probeAt != int64(2021*ms)+c.paced(int64(ctlInterval)) {
				t.Errorf("verdict %+v, factor %.2f; want a probe at the next paced turn, no cut (trimmed to 0.99)", v, c.factor)
			}
		}},
	})
}

// A GCRA server whose Limit is its burst (10 per 1 s stated, 100/s real)
// seen admitting a run at the pace after it reported its quota spent: a
// refusal at that pace is a near miss, not cut, but once — the evidence is
// spent, and the next refusal without a new run is cut. A refusal at a
// faster pace than the run's is cut too, as is one after a run too short
// or one with part of the quota still held. Before any refusal, the whole
// told burst admitted presumes the told pace: the first refusal is
// excused, once.
func TestControlNearMissAtAKeptPaceDoesNotCut(t *testing.T) {
	run := func(c *control, from time.Duration, remaining string) []ctlStep {
		steps := []ctlStep{{at: from + ms, sent: from, status: 200, h: quota(remaining, "10", "1")}}
		for i := 1; i <= 10+keptBeyondBurst; i++ {
			sent := from + time.Duration(i)*c.pacedDur()
			steps = append(steps, ctlStep{at: sent + ms, sent: sent, status: 200, h: quota(remaining, "10", "1")})
		}
		return steps
	}
	kept := func(c *control, from time.Duration) []ctlStep { return run(c, from, "0") }
	refusal := func(at time.Duration, cut bool) ctlStep {
		return ctlStep{at: at + ms, sent: at, status: 429, h: withRetryAfter(quota("0", "10", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.cut != cut || v.probeAt == 0 {
				t.Errorf("verdict %+v, want cut %v and a probe at the next paced turn", v, cut)
			}
		}}
	}
	t.Run("excused once", func(t *testing.T) {
		c := newControl(DefaultAdaptive())
		c.model, c.kept.first = modelContinuous, -1 // past its first refusal
		steps := append(kept(&c, 0), refusal(300*ms, false))
		steps = append(steps, ctlStep{at: 312 * ms, sent: 311 * ms, status: 200, h: quota("0", "10", "1")}) // the probe
		steps = append(steps, refusal(330*ms, true))
		runCtl(t, &c, steps)
	})
	t.Run("a run too short", func(t *testing.T) {
		c := newControl(DefaultAdaptive())
		c.model, c.kept.first = modelContinuous, -1 // past its first refusal
		steps := kept(&c, 0)
		runCtl(t, &c, append(steps[:len(steps)-1], refusal(300*ms, true)))
	})
	t.Run("no report of the quota spent", func(t *testing.T) {
		// Admissions while the server still held part of its quota show
		// nothing of its refill.
		c := newControl(DefaultAdaptive())
		c.model, c.kept.first = modelContinuous, -1 // past its first refusal
		runCtl(t, &c, append(run(&c, 0, "3"), refusal(300*ms, true)))
	})
	t.Run("one burst", func(t *testing.T) {
		// Reports of requests sent at the instant of the one that spent
		// the quota came out of order: no refill shown.
		c := newControl(DefaultAdaptive())
		c.model, c.kept.first = modelContinuous, -1 // past its first refusal
		steps := kept(&c, 0)
		for i := range steps {
			steps[i].sent = 0
		}
		runCtl(t, &c, append(steps, refusal(300*ms, true)))
	})
	t.Run("the told burst admitted before the first refusal", func(t *testing.T) {
		c := newControl(DefaultAdaptive())
		c.model = modelContinuous
		var steps []ctlStep
		for i := range 10 { // the told burst, all admitted
			steps = append(steps, ctlStep{at: ms, sent: 0, status: 200, h: quota(strconv.Itoa(9-i), "10", "1")})
		}
		steps = append(steps, refusal(10*ms, false))
		steps = append(steps, ctlStep{at: 22 * ms, sent: 21 * ms, status: 200, h: quota("0", "10", "1")}) // the probe
		runCtl(t, &c, append(steps, refusal(40*ms, true)))
	})
	t.Run("part of the told burst refused", func(t *testing.T) {
		// A call of the first burst refused with a wait of one interval,
		// rounded up: the server's quota was a sliver short of whole.
		// Excused, with every refusal of a request sent before that was
		// known (the same near miss); a refusal that comes later, here
		// one Budget.Observe reports, cuts, and the probe the near miss
		// armed goes at the cut pace's next turn.
		c := newControl(DefaultAdaptive())
		c.model = modelContinuous
		var steps []ctlStep
		for i := range 8 {
			steps = append(steps, ctlStep{at: ms, sent: 0, status: 200, h: quota(strconv.Itoa(9-i), "10", "1")})
		}
		runCtl(t, &c, steps)
		// The probe is not sent yet when the next refusals come.
		refused := func(sent, at time.Duration, justNow bool) verdict {
			return c.observe(observation{status: 429, f: ratelimit.Parse(429, withRetryAfter(quota("0", "10", "1"), "1"), time.Now()),
				sent: int64(sent), now: int64(at), interval: int64(ctlInterval), burst: 10, justNow: justNow})
		}
		if v := refused(0, ms, false); v.cut || v.probeAt != int64(11*ms) {
			t.Errorf("verdict %+v, want no cut and a probe at the next paced turn, 11ms", v)
		}
		if v := refused(0, 2*ms, false); v.cut {
			t.Errorf("verdict %+v, want the burst's second refusal excused with the first", v)
		}
		if v := refused(3*ms, 3*ms, true); !v.cut || v.probeAt != int64(3*ms)+c.paced(int64(ctlInterval)) || v.holdUntil != int64(1001*ms) {
			t.Errorf("verdict %+v, want a cut and the probe at the cut pace's next turn, the rest held to 1.001s", v)
		}
	})
	t.Run("a paced call refused after the burst", func(t *testing.T) {
		// Only the first burst's calls and the first paced call after it
		// are excused that way: a later paced call refused shows the pace
		// too fast.
		c := newControl(DefaultAdaptive())
		c.model = modelContinuous
		var steps []ctlStep
		for i := range 9 {
			steps = append(steps, ctlStep{at: ms, sent: 0, status: 200, h: quota(strconv.Itoa(9-i), "10", "1")})
		}
		runCtl(t, &c, append(steps, refusal(20*ms, true)))
	})
	t.Run("a refusal of the burst that names a long wait", func(t *testing.T) {
		c := newControl(DefaultAdaptive())
		c.model = modelContinuous
		var steps []ctlStep
		for i := range 9 {
			steps = append(steps, ctlStep{at: ms, sent: 0, status: 200, h: quota(strconv.Itoa(9-i), "10", "1")})
		}
		steps = append(steps, ctlStep{at: ms, sent: 0, status: 429, h: withRetryAfter(quota("0", "10", "5"), "2"),
			check: func(t *testing.T, c *control, v verdict) {
				if !v.cut {
					t.Errorf("verdict %+v, want a cut: two seconds is no sliver of a token", v)
				}
			}})
		runCtl(t, &c, steps)
	})
	t.Run("faster than the run", func(t *testing.T) {
		c := newControl(DefaultAdaptive())
		// Past its first refusal, the run at 50/s …
		c.model, c.kept.first, c.factor = modelContinuous, -1, 0.5
		steps := kept(&c, 0)
		runCtl(t, &c, steps)
		c.factor = 1 // … the refusal at 100/s
		runCtl(t, &c, []ctlStep{refusal(500*ms, true)})
	})
}

// pacedDur is the controller's paced interval at ctlInterval.
func (c *control) pacedDur() time.Duration { return time.Duration(c.paced(int64(ctlInterval))) }

// A probe refused at a pace within the rate the server states (Limit per
// window) shows the quota spent, not the pace too fast: the wait is
// honoured, the pace is not cut — a sliding window's counter after a
// burst that spent a whole window (cut, the batch after a server pause ran
// 1.27× the ideal + pause instead of 1.18×). Above the stated rate it is.
func TestControlRefusedProbeWithinStatedRateDoesNotCut(t *testing.T) {
	for _, s := range []struct {
		limit  string
		factor float64 // after the probe's refusal
	}{{"100", 0.99}, {"10", 0.25}} { // trimmed by one per window after the first refusal; cut at both
		t.Run("Limit "+s.limit, func(t *testing.T) {
			c := newControl(DefaultAdaptive())
			c.model, c.kept.first = modelContinuous, -1
			runCtl(t, &c, []ctlStep{
				{at: 1 * ms, sent: 0, status: 200, h: quota("5", s.limit, "1")},
				{at: 11 * ms, sent: 10 * ms, status: 429, h: withRetryAfter(quota("0", s.limit, "1"), "1")},
			})
			probe := time.Duration(c.probe.sentAt) // the next paced turn
			runCtl(t, &c, []ctlStep{
				{at: probe + ms, sent: probe, status: 429, h: withRetryAfter(quota("0", s.limit, "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
					if v.pause != int64(probe+ms+time.Second) || c.factor != s.factor {
						t.Errorf("verdict %+v, factor %.2f; want the wait until %v, factor %.2f", v, c.factor, probe+ms+time.Second, s.factor)
					}
				}},
			})
		})
	}
}

// WithoutAdaptive the pace is the configured one whatever the server
// answers: a near miss within the stated rate trims nothing either.
func TestControlWithoutAdaptiveNeverTrims(t *testing.T) {
	c := newControl(Adaptive{})
	c.model = modelContinuous
	runCtl(t, &c, []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("5", "100", "1")},
		{at: 11 * ms, sent: 10 * ms, status: 429, h: withRetryAfter(quota("0", "100", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.factor != 1 {
				t.Errorf("factor %.2f without adaptive throttling, want 1", c.factor)
			}
		}},
	})
}

// A first refusal excused as a near miss arms a probe that is no evidence
// of the model: refused in turn (told twice the rate: the pace is too fast,
// not the quota windowed), it is as early as a first refusal — the pace is
// cut and one more probe goes when a token would surely have returned.
// Read as windows, a GCRA server was waited on a whole reset per burst:
// 7–9× the ideal in `make demo`'s misconfigured runs.
func TestControlRefusedNearMissProbeIsNoEvidenceOfWindows(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: ms, sent: 0, status: 200, h: quota("1", "40", "1")}, // the burst's quota was there: admitted
		{at: ms, sent: 0, status: 429, h: withRetryAfter(quota("0", "40", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.cut || v.probeAt != int64(11*ms) {
				t.Errorf("verdict %+v: want the first burst's refusal excused, a probe at the next paced turn", v)
			}
		}},
		{at: 12 * ms, sent: 11 * ms, status: 429, h: withRetryAfter(quota("0", "40", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.model == modelWindowed || !v.cut || v.probeAt != int64(37*ms) {
				t.Errorf("verdict %+v, model %d: want no windows learnt, a cut, and a probe when a token surely returned (12ms + 1s/40)", v, c.model)
			}
		}},
	})
}

// Trimmed for a near miss at the rate the server states (100 per 1 s),
// the pace grows back no further than the trim, one request per window
// below that rate (ceiling), however long the reports show a token of
// room — a sliding-window counter paced there shows one whenever its
// requests reach it a little after their turns — but up to the told rate
// once the server states a higher one.
func TestControlTrimIsACeiling(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first = modelContinuous, -1 // past its first refusal
	steps := []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("5", "100", "1")},
		{at: 11 * ms, sent: 10 * ms, status: 429, h: withRetryAfter(quota("0", "100", "1"), "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.cut || c.factor != 0.99 {
				t.Errorf("verdict %+v, factor %v; want no cut, trimmed to 0.99", v, c.factor)
			}
		}},
	}
	at := 1011 * ms
	for ; at < 6*time.Second; at += 10 * ms { // 5 s of room at the trimmed pace
		steps = append(steps, ctlStep{at: at, sent: at - ms, status: 200, h: quota("1", "100", "1")})
	}
	steps[len(steps)-1].check = func(t *testing.T, c *control, v verdict) {
		if c.factor != 0.99 {
			t.Errorf("factor %v after 5 s of room at the trimmed pace, want 0.99 (the ceiling)", c.factor)
		}
	}
	for end := at + 5*time.Second; at < end; at += 10 * ms { // the server states 200 per 1 s
		steps = append(steps, ctlStep{at: at, sent: at - ms, status: 200, h: quota("100", "200", "1")})
	}
	steps[len(steps)-1].check = func(t *testing.T, c *control, v verdict) {
		if c.factor != 1 {
			t.Errorf("factor %v after 5 s of room at a stated 200/s, want 1 (the told rate)", c.factor)
		}
	}
	runCtl(t, &c, steps)
}

// A server seen admitting more than twice its Limit within a window is a
// bucket whose stated rate is no limit (bucketSeen): a trim's ceiling,
// one request per window below that rate, no longer holds growth back.
func TestControlTrimNoCeilingOnABucket(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first = modelContinuous, -1 // past its first refusal
	steps := []ctlStep{
		{at: 1 * ms, sent: 0, status: 200, h: quota("5", "100", "1")},
		{at: 11 * ms, sent: 10 * ms, status: 429, h: withRetryAfter(quota("0", "100", "1"), "1")},
	}
	at := 1011 * ms
	for ; at < 1311*ms; at += ms { // 300 admitted in 300 ms: more than twice the Limit of 100 per 1 s
		steps = append(steps, ctlStep{at: at, sent: at - ms, status: 200, h: quota("1", "100", "1")})
	}
	for end := at + 5*time.Second; at < end; at += 10 * ms {
		steps = append(steps, ctlStep{at: at, sent: at - ms, status: 200, h: quota("1", "100", "1")})
	}
	steps[len(steps)-1].check = func(t *testing.T, c *control, v verdict) {
		if !c.trimmed || !c.bucket.seen || c.factor != 1 {
			t.Errorf("trimmed %v, bucket seen %v, factor %v after 5 s of room; want a trim, a bucket, and 1 (no ceiling)", c.trimmed, c.bucket.seen, c.factor)
		}
	}
	runCtl(t, &c, steps)
}
