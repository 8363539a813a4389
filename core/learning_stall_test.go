package core

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// A learning budget whose wire stalls mid-batch — every request sent in
// the stall reaches the server at its end, where a GCRA bucket, full since
// the stall began, admits its burst and refuses the rest — still learns
// the server's rate. Over loopback a stall of 83 ms on a loaded machine
// left the learned rate at ~64/s for good (1.20× the ideal): the refill
// measured over the stall's answers read the refused requests and the
// bucket's lost refill as a slow drain, and the rate, once measured twice,
// was final. Now a refusal voids the measurement's anchor, a rate measured
// low creeps up again while the quota shows whole, and it creeps only while
// no cut slows the pace (else the learned rate drifts above the server's
// while the cut rate is what the server sees). Not yet met: a 250 ms
// stall averages 1.16× at 2.5 s, and at 1.5 s ends at 1.23× one batch in
// ten (a rate still settles low now and then over the stall's drain,
// before its refusals come back).
func TestBatchLearnedRateThroughAStall(t *testing.T) {
	for _, c := range []struct{ at, stall time.Duration }{
		{2500 * time.Millisecond, 150 * time.Millisecond},
		{3500 * time.Millisecond, 150 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%v stall at %v", c.stall, c.at), func(t *testing.T) {
			// The goroutines' order moves the stall's answers among the
			// paced ones: twenty batches, held on their mean and each one's
			// rate (one in ten ends at 1.2–1.25×, its rate settled low
			// over the stall's drain before its refusals came back).
			const runs = 20
			var sumX, sumRate float64
			for range runs {
				synctest.Test(t, func(t *testing.T) {
					toYear2026()
					bt := issueBatch(gcra10Delta) // told nothing: NewLearningBudget
					var start time.Time
					bt.late = func(sent, _ time.Time) time.Duration {
						if start.IsZero() {
							start = sent
						}
						if from := start.Add(c.at); !sent.Before(from) && sent.Before(from.Add(c.stall)) {
							return from.Add(c.stall).Sub(sent)
						}
						return 0
					}
					r := runBatch(t, bt)
					x := float64(r.makespan) / float64(bt.ideal())
					t.Logf("429s %d, makespan %v = %.3f× the ideal, learned %v", r.refused, r.makespan, x, r.rate)
					if got := r.rate.PerSecondFloat(); got > 105 {
						t.Errorf("learned %v; want no more than the server's 100 per second and 5 %%", r.rate)
					}
					sumX, sumRate = sumX+x, sumRate+r.rate.PerSecondFloat()
				})
			}
			if x := sumX / runs; x > 1.15 {
				t.Errorf("%.3f× the ideal on average; want ≤ 1.15×", x)
			}
			if got := sumRate / runs; got < 90 {
				t.Errorf("learned %.1f/s on average; want the server's 100 per second, within 10 %%", got)
			}
		})
	}
}

// A measured rate is never final: found whole twice in a row, the quota
// shows the server refilling faster than the pace (a rate measured low
// over a stall, or a server that raised its rate), and the rate creeps up
// again — but not while a cut slows the pace, when the quota found whole
// says nothing of the learned rate.
func TestLearnedRateSettledLowCreepsUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64
		want   float64
	}{
		{"paced at the learned rate", 1, 51},
		{"paced at a cut", 0.5, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, err := NewLearningBudget()
				if err != nil {
					t.Fatal(err)
				}
				b.lock()
				b.setLearnedLocked(Rate{Requests: 50, Period: time.Second}, 10)
				b.refill.measured = true
				b.ctl.pol.factor = tc.factor
				b.unlock()
				start := time.Now()
				b.Observe(200, quota("9", "10", "1"), start)
				time.Sleep(20 * time.Millisecond)
				b.Observe(200, quota("9", "10", "1"), start.Add(20*time.Millisecond))
				if got := b.Rate().PerSecondFloat(); got != tc.want {
					t.Errorf("rate %v after the quota found whole twice; want %v per second", b.Rate(), tc.want)
				}
			})
		})
	}
}
