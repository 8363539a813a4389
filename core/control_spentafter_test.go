package core

import (
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The freshest report, by its request's send time, left two tokens; two
// answers from its burst came after it, each reporting less remaining:
// the server decided them later, and they took those two tokens. The
// last arms the probe, as a fresh report of the quota spent would, and
// the freshest report stays the freshest. Fewer such answers than the
// tokens it left, an answer that reports no less than it (decided before
// it), or one from a request sent a paced interval or more before it (not
// its burst) arm nothing: one stale report of the quota spent may have
// been decided before the freshest, a window turning between them
// (TestControlEarlierReportNeverOverridesLater).
func TestControlSpentAfterArmsTheProbe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first ctlStep // the first answer after the freshest, which reports 2 left
		sent  time.Duration
		probe bool
	}{
		{"both its burst's", ctlStep{at: 14 * ms, sent: 8 * ms, status: 200, h: quota("1", "100", "1")}, 9 * ms, true},
		{"one decided before it", ctlStep{at: 14 * ms, sent: 8 * ms, status: 200, h: quota("5", "100", "1")}, 9 * ms, false},
		{"the last before its burst", ctlStep{at: 14 * ms, sent: 8 * ms, status: 200, h: quota("1", "100", "1")}, 1 * ms, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newControl(DefaultAdaptive())
			first := tc.first
			first.check = func(t *testing.T, c *control, v verdict) {
				if v.probeAt != 0 || v.pause != 0 {
					t.Errorf("verdict %+v: one token of two taken, want nothing held", v)
				}
			}
			runCtl(t, &c, []ctlStep{
				{at: 13 * ms, sent: 12 * ms, status: 200, h: quota("2", "100", "1")},
				first,
				{at: 15 * ms, sent: tc.sent, status: 200, h: quota("0", "100", "1"), check: func(t *testing.T, c *control, v verdict) {
					if armed := v.probeAt != 0; armed != tc.probe || c.last.sent != int64(12*ms) || c.last.remaining != 2 {
						t.Errorf("verdict %+v, last report %+v: want a probe %v, the report sent at 12ms still the freshest", v, c.last, tc.probe)
					}
					if tc.probe && (v.probeAt != int64(15*ms+ctlInterval) || v.holdUntil != int64(1015*ms)) {
						t.Errorf("verdict %+v: want a probe at 25ms, the rest held until 1.015s", v)
					}
				}},
			})
		})
	}
}

// Over loopback, under the bench's cap of 16 in flight, a few of the first
// burst's requests reach fiber's server several ms after the budget
// granted them — their goroutines late on a loaded machine — and after
// requests granted ms later: the freshest report (the last granted) leaves
// as many tokens as there are such requests, and they take them. Read as
// stale, their reports of the quota spent armed no probe: the first paced
// call went unprobed, refused as a near miss, and its probe was refused
// too: 3 429s in 14 of these 18 runs (all but the one late request's,
// which burstSpent covered, and one other), where 2 are the least a client
// that must learn fiber's rule can draw. With spentAfter, 2 in each.
func TestBatchCountingWindowFirstBurstLateRequests(t *testing.T) {
	for _, late := range [][]int64{{40}, {40, 50}, {30, 50}, {50, 60}, {35, 45, 55}, {20, 40, 60}} {
		for _, d := range []time.Duration{5 * ms, 6 * ms, 7 * ms} {
			t.Run(fmt.Sprint(late, "/", d), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toYear2026()
					srv := &countingWindow{limit: 100, latency: time.Millisecond}
					var n atomic.Int64
					slow := wire{next: srv, late: func(time.Time) time.Duration {
						k := n.Add(1) // the kth request to leave the budget
						for _, l := range late {
							if k == l {
								return d
							}
						}
						return 0
					}}
					refused, makespan := runCountingOver(t, srv, slow, 0, WithMaxInFlight(16))
					t.Logf("%d 429s, makespan %v (the floor 9s)", refused, makespan)
					if makespan > 9*time.Second+50*time.Millisecond || refused > 2 {
						t.Errorf("%d 429s, makespan %v; want 2 at most and within 50ms of the floor 9s", refused, makespan)
					}
				})
			})
		}
	}
}

// The answers counted are those after the freshest report: when a fresher
// one comes, what it leaves is counted afresh — the two answers before it
// took tokens the first report left, not the ones it leaves.
func TestControlSpentAfterCountsForTheFreshestOnly(t *testing.T) {
	c := newControl(DefaultAdaptive())
	runCtl(t, &c, []ctlStep{
		{at: 13 * ms, sent: 12 * ms, status: 200, h: quota("5", "100", "1")},
		{at: 14 * ms, sent: 8 * ms, status: 200, h: quota("4", "100", "1")},
		{at: 15 * ms, sent: 9 * ms, status: 200, h: quota("3", "100", "1")},
		{at: 17 * ms, sent: 16 * ms, status: 200, h: quota("2", "100", "1")},
		{at: 18 * ms, sent: 10 * ms, status: 200, h: quota("0", "100", "1"), check: func(t *testing.T, c *control, v verdict) {
			if v.probeAt != 0 || v.pause != 0 || c.last.sent != int64(16*ms) {
				t.Errorf("verdict %+v, last report %+v: one of the two tokens the freshest left taken, want nothing held", v, c.last)
			}
		}},
	})
}
