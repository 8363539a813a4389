package core

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/core/ratelimit"
)

// After a cut, the pace runs at the server's own: its reports flicker
// between a token of room and none, and each report of room ends the run
// of spent reports, so a refusal just after one finds no such run. The
// run from the cut's refusal still shows the server keeping 9 tokens in
// the 210 ms since its answer (the quota spent at both ends): the pace is
// eased to 0.43 of the configured one, not halved again to 0.25.
func TestControlRefusalAfterACutEasesFromTheCut(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first = modelContinuous, -1
	refusal := withRetryAfter(quota("0", "10", "1"), "1")
	steps := []ctlStep{
		{at: 5 * ms, sent: 4 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if !v.cut || c.factor != 0.5 {
				t.Errorf("verdict %+v, factor %v; want a cut to 0.5", v, c.factor)
			}
		}},
	}
	for i, sent := 0, 25*ms; sent <= 205*ms; i, sent = i+1, sent+20*ms { // the probe at the cut pace's turn, then the pace
		steps = append(steps, ctlStep{at: sent + ms, sent: sent, status: 200, h: quota(fmt.Sprint((i+1)%2), "10", "1")})
	}
	steps = append(steps, ctlStep{at: 216 * ms, sent: 215 * ms, status: 429, h: refusal,
		check: func(t *testing.T, c *control, v verdict) {
			want := 9 * float64(ctlInterval) / float64(210*ms)
			if !v.cut || math.Abs(c.factor-want) > 1e-9 {
				t.Errorf("verdict %+v, factor %v; want the pace eased to %.3f", v, c.factor, want)
			}
		}})
	runCtl(t, &c, steps)
}

// A near miss excused at the pace kept (keptPace) arms a probe at that
// pace's next turn. Refused for a whole-second wait on a continuous
// quota, the miss was none: the pace is cut, and one more probe goes at
// the cut pace's next turn — the probe a first refusal at that pace would
// send — the others held until the wait ends. (Honoured at once, a GCRA
// server's "1 s", rounded up from the few ms to its next token, idled
// every caller for a second: make demo told twice its server's rate, 1.8×
// the ideal.)
func TestControlRefusedNearMissProbeProbesAtTheCutPace(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first, c.kept.interval = modelContinuous, -1, int64(ctlInterval)
	refusal := withRetryAfter(quota("0", "10", "1"), "1")
	runCtl(t, &c, []ctlStep{
		{at: 101 * ms, sent: 100 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if v.cut || v.probeAt != int64(111*ms) || !c.probe.near {
				t.Errorf("verdict %+v, probe %+v; want a near miss, its probe at the pace's next turn, 111ms", v, c.probe)
			}
		}},
		{at: 112 * ms, sent: 111 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if !v.cut || c.factor != 0.5 || v.pause != 0 || v.probeAt != int64(132*ms) || v.holdUntil != int64(1112*ms) {
				t.Errorf("verdict %+v, factor %v; want a cut to 0.5, no pause, one more probe at the cut pace's turn (132ms), the others held until 1.112s", v, c.factor)
			}
		}},
		{at: 133 * ms, sent: 132 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if v.pause != int64(1133*ms) {
				t.Errorf("verdict %+v; want the wait honoured (until 1.133s) once the probe at the cut pace is refused too", v)
			}
		}},
	})
}

// make demo's misconfigured scenario as it runs: the server (GCRA, 400/s,
// burst 40, GitHub-style headers) and the budget told twice its rate with
// its exact burst and 16 in flight, the wire 0–1 ms late at random. The
// first wave's refusals cut the pace onto the server's; the refusal of a
// pace grown a hair above it eases the pace (the run since the cut shows
// the server keeping it), never halves it again: the batch ends within
// 10 % of the ideal at every phase of the server's second (1.10–1.14× at
// a third of them when the refusal read only the run since the last
// report of the quota spent).
func TestBatchToldTwiceTheDemosRateWithItsBurst(t *testing.T) {
	for _, jitter := range []time.Duration{0, 300 * time.Microsecond, time.Millisecond} {
		for _, phase := range []time.Duration{0, 100, 200, 300, 400, 500, 600, 700, 800, 900} {
			t.Run(fmt.Sprint(jitter, "/", phase*time.Millisecond), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					time.Sleep(phase * time.Millisecond)
					bt := batch{server: quotatest.Config{Requests: 400, Period: time.Second, Burst: 40,
						Headers: quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds},
						n: 600, workers: 100, latency: 200 * time.Microsecond, maxInFlight: 16}
					bt.told, bt.burst = PerSecond(800), 40
					if jitter > 0 {
						bt.late = func(sent, _ time.Time) time.Duration {
							h := uint64(sent.UnixNano()) * 0x9E3779B97F4A7C15 // a hash of the send time
							return time.Duration(h>>33) % jitter
						}
					}
					r := runBatch(t, bt)
					ideal := time.Duration(bt.n-40) * 2500 * time.Microsecond
					x := float64(r.makespan) / float64(ideal)
					t.Logf("429s %d, makespan %v = %.3f× the ideal %v", r.refused, r.makespan, x, ideal)
					if x > 1.10 {
						t.Errorf("told twice the demo's rate: %.3f× the ideal, want ≤ 1.10×", x)
					}
				})
			})
		}
	}
}

// A first refusal at the told pace, read when 7 of the told burst of 10
// were answered (the burst left over 25 ms, behind a cap on calls in
// flight, and its answers come in another order), cuts the pace. The
// burst's other answers, a millisecond later, show the whole told burst
// admitted — the near miss keptPace excuses — and the cut is undone (a
// refusal of the same wave does not disarm it). Left at half, the pace
// stayed there for the server's second: make demo told its server's exact
// rate, 1.78× the ideal.
func TestControlFirstCutUndoneWhenTheBurstWasWhole(t *testing.T) {
	c := newControl(DefaultAdaptive())
	refusal := withRetryAfter(quota("0", "10", "1"), "1")
	steps := append(burstAnsweredBeforeItsRefusal(),
		ctlStep{at: 26 * ms, sent: 25 * ms, status: 429, h: refusal, check: func(t *testing.T, c *control, v verdict) {
			if !v.cut || c.factor != 0.5 {
				t.Errorf("verdict %+v, factor %v; want a cut to 0.5", v, c.factor)
			}
		}},
		ctlStep{at: 27 * ms, sent: 12 * ms, status: 200, h: quota("2", "10", "1")},
		ctlStep{at: 27 * ms, sent: 25 * ms, status: 429, h: refusal},
		ctlStep{at: 28 * ms, sent: 24 * ms, status: 200, h: quota("1", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if c.factor != 0.5 {
				t.Errorf("verdict %+v, factor %v; want 0.5 still, 9 of the burst admitted", v, c.factor)
			}
		}},
		ctlStep{at: 28 * ms, sent: 25 * ms, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if !v.restored || c.factor != 1 {
				t.Errorf("verdict %+v, factor %v; want the cut undone, the whole burst of 10 admitted", v, c.factor)
			}
		}},
	)
	runCtl(t, &c, steps)
}

// burstAnsweredBeforeItsRefusal is 7 of a told burst of 10 admitted (4
// sent at once, 3 at 12 ms behind the cap on calls in flight) before the
// refusal that follows them is read.
func burstAnsweredBeforeItsRefusal() []ctlStep {
	var steps []ctlStep
	for i, sent := range []time.Duration{0, 0, 0, 0, 12 * ms, 12 * ms, 12 * ms} {
		steps = append(steps, ctlStep{at: sent + 2*ms, sent: sent, status: 200, h: quota(fmt.Sprint(9-i), "10", "1")})
	}
	return steps
}

// The same cut is kept when a call sent after the wave is refused before
// the wave shows the whole told burst admitted (here for a server pause,
// which cuts nothing itself).
func TestControlFirstCutKeptWhenALaterCallIsRefused(t *testing.T) {
	c := newControl(DefaultAdaptive())
	refusal := withRetryAfter(quota("0", "10", "1"), "1")
	steps := append(burstAnsweredBeforeItsRefusal(),
		ctlStep{at: 26 * ms, sent: 25 * ms, status: 429, h: refusal},
		ctlStep{at: 47 * ms, sent: 46 * ms, status: 429, h: withRetryAfter(quota("0", "10", "3"), "3")},
		ctlStep{at: 48 * ms, sent: 12 * ms, status: 200, h: quota("2", "10", "1")},
		ctlStep{at: 48 * ms, sent: 24 * ms, status: 200, h: quota("1", "10", "1")},
		ctlStep{at: 48 * ms, sent: 25 * ms, status: 200, h: quota("0", "10", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.restored || c.factor != 0.5 {
				t.Errorf("verdict %+v, factor %v; want the cut to 0.5 kept: a call sent after the wave was refused", v, c.factor)
			}
		}},
	)
	runCtl(t, &c, steps)
}

// The run from the last cut's answer (spentRun.cutFrom) ends once the
// pace grew back to the configured one: ten minutes at the
// configured pace later, the server's quota drops, and the first refusal
// cuts — read over the whole ten minutes, the run showed the server
// keeping nearly all of the pace, and the refusal barely eased it.
func TestControlRunSinceTheCutEndsOnceThePaceRecovered(t *testing.T) {
	c := newControl(DefaultAdaptive())
	c.model, c.kept.first = modelContinuous, -1
	obs := func(status int, h http.Header, sent, at int64) verdict {
		f := ratelimit.Parse(status, h, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(at)))
		return c.observe(observation{status: status, f: f, sent: sent, now: at, interval: int64(ctlInterval), burst: 10})
	}
	refusal := withRetryAfter(quota("0", "10", "1"), "1")
	v := obs(429, refusal, int64(4*ms), int64(5*ms))
	t.Logf("first: cut %v factor %v", v.cut, c.factor)
	c.probe = probe{}
	sent := int64(20 * ms)
	for ; sent < int64(600_000*ms); sent += int64(ctlInterval) {
		obs(200, quota("5", "10", "1"), sent, sent+int64(ms))
	}
	t.Logf("after 10 min of room: factor %v", c.factor)
	c.probe = probe{}
	v = obs(429, refusal, sent, sent+int64(ms))
	t.Logf("refusal after the drop: cut %v factor %v", v.cut, c.factor)
	if c.factor > 0.9 {
		t.Errorf("factor %v after a refusal; a ten-minute-old cut's run eased it to the long average", c.factor)
	}
}
