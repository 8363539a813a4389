package core

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// Told a fixed-window server's exact rate and burst, with a cap on the
// requests in flight (the bench's 16), the window's quota leaves in waves
// as answers come back: 100 requests take 10–20 ms, a few ms more when
// the answers straggle, over which the told pace returns a token or two.
// Sent, they reach a window already spent (over loopback: 102 sent into a
// window of 100, and 8 more after a 120 ms stall). On a windowed server
// the probe's answer says what the window has left; once that many went,
// the rest wait for the window's end, whatever the told pace allows.
func TestBatchFixedWindowToldExactRateInFlightCap(t *testing.T) {
	for _, phase := range []time.Duration{0, 180 * ms, 600 * ms} {
		for _, s := range []struct {
			name string
			cfg  quotatest.Config
		}{
			{"X-RateLimit delta", fixedDelta},
			{"IETF", fixedIETF},
		} {
			t.Run(fmt.Sprintf("%v past the second, %s", phase, s.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toYear2026()
					time.Sleep(phase)
					bt := issueBatch(s.cfg)
					bt.told, bt.burst, bt.maxInFlight = PerSecond(100), 100, 16
					var answers atomic.Int64
					bt.back = func(time.Time) time.Duration { // 0–3 ms more on the way back, in turn
						return time.Duration(answers.Add(1)%4) * ms
					}
					r := runBatch(t, bt)
					wantToldExactly(t, bt, r)
					if r.refused > 2 {
						t.Errorf("%d 429s; want 2 at most (the call after the first burst, and its probe)", r.refused)
					}
					if err := quotatest.CheckTimes(sortedTimes(r.arrivals), bt.burst, bt.told.Interval(), 0); err != nil {
						t.Errorf("sent faster than told: %v", err)
					}
				})
			})
		}
	}
}

// Over loopback the first burst's requests reach the server in another
// order than they left: the report that the window is spent (Remaining 0)
// comes for a request sent a few ms before the last one, whose report
// said one remains. Not the freshest, it holds nobody, and the next paced
// call is refused. With the whole told burst admitted before it, that is a
// near miss (the told pace presumed right), and the probe it arms goes a
// paced interval later. The probe's refusal is evidence of windows when a
// continuous server stating its quota (Limit in Reset) would surely have
// returned a token by then (nearRefill); it was taken for none, and one
// more probe went into the spent window (3 429s before the first turn, as
// over loopback in 3 of 12 cells).
func TestBatchFixedWindowToldExactRateFirstBurstShuffled(t *testing.T) {
	for _, k := range []int64{70, 80, 85, 90, 95} {
		for _, s := range []struct {
			name string
			cfg  quotatest.Config
		}{
			{"X-RateLimit delta", fixedDelta},
			{"IETF", fixedIETF},
		} {
			t.Run(fmt.Sprintf("%d, %s", k, s.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toYear2026()
					time.Sleep(180 * ms)
					bt := issueBatch(s.cfg)
					bt.told, bt.burst, bt.maxInFlight = PerSecond(100), 100, 16
					var n atomic.Int64
					bt.late = func(sent, _ time.Time) time.Duration { // the kth request: 5 ms late
						if n.Add(1) != k {
							return 0
						}
						return 5 * ms
					}
					r := runBatch(t, bt)
					wantToldExactly(t, bt, r)
					if r.refused > 2 {
						t.Errorf("%d 429s; want 2 at most (the call after the first burst, and its probe)", r.refused)
					}
				})
			})
		}
	}
}

// The answer that says the first burst spent the window (the burst's
// last, Remaining 0) comes back 30 ms late: the next paced call is refused
// before any report of a spent quota came, a near miss (the rest of the
// burst was admitted), and the probe it arms a paced interval later is
// refused too. That probe's refusal shows windows when the quota the
// server states would have returned a token by then on a continuous
// server (nearRefill); taken for no evidence, one more probe went into the
// spent window, three 429s where two tell.
func TestBatchFixedWindowToldExactRateSpentReportLate(t *testing.T) {
	for _, phase := range []time.Duration{0, 180 * ms, 600 * ms} {
		for _, s := range []struct {
			name string
			cfg  quotatest.Config
		}{
			{"X-RateLimit delta", fixedDelta},
			{"IETF", fixedIETF},
		} {
			t.Run(fmt.Sprintf("%v past the second, %s", phase, s.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toYear2026()
					time.Sleep(phase)
					bt := issueBatch(s.cfg)
					bt.told, bt.burst = PerSecond(100), 100
					var once atomic.Bool
					bt.answer = func(h http.Header, status int) {
						spent := h.Get("X-RateLimit-Remaining") == "0" || strings.Contains(h.Get("RateLimit"), ";r=0;")
						if status == http.StatusOK && spent && once.CompareAndSwap(false, true) {
							time.Sleep(30 * ms)
						}
					}
					r := runBatch(t, bt)
					wantToldExactly(t, bt, r)
					if r.refused > 2 {
						t.Errorf("%d 429s; want 2 at most (the call after the first burst, and its probe)", r.refused)
					}
				})
			})
		}
	}
}
