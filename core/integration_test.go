package core_test

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

// These tests meet a real quotatest server over loopback with a real
// http.Client: real time on a machine that may be loaded, so their bounds
// are generous — they check that the parts meet and behave, not the
// figures. integration_synctest_test.go holds the tight bounds (5 %) for
// the same scenarios in virtual time.

type batchResult struct {
	makespan time.Duration
	attempts int // requests that reached the server's transport, retries included
	refused  int // 429 responses seen by the callers
	failed   int // calls that never got a 200
}

// runBatch sends n GETs from workers goroutines through c; a 429 is
// retried (through the budget, which waits out the pause) up to 10 times.
func runBatch(t *testing.T, c *http.Client, url string, n, workers int) batchResult {
	t.Helper()
	var next, attempts, refused, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				ok := false
				for range 10 {
					attempts.Add(1)
					resp, err := c.Get(url)
					if err != nil {
						t.Errorf("GET: %v", err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						ok = true
						break
					}
					refused.Add(1)
				}
				if !ok {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return batchResult{time.Since(start), int(attempts.Load()), int(refused.Load()), int(failed.Load())}
}

func newQuotaServer(t *testing.T, cfg quotatest.Config) *quotatest.Server {
	t.Helper()
	s, err := quotatest.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestIntegrationPacedAtTheServerLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time integration test")
	}
	// The server enforces 100/s with a burst of 100; the client is configured with the
	// same rate and keeps half the burst as headroom. A request leaves
	// after its turn, never before; a stalled machine can only delay sends
	// and bunch them, so the server sees at most the turns of (stall /
	// 10ms) more intervals in a window than the budget granted: with 50
	// intervals of headroom, "no 429" and the pacing bound with 500ms of
	// slack hold unless the machine stalls for half a second. The exact
	// bounds (5 % makespan) hold in virtual time: TestSynctestPacedAtTheServerLimit.
	srv := newQuotaServer(t, quotatest.Config{Requests: 100, Period: time.Second,
		Headers: quotatest.XRateLimitDelta | quotatest.RetryAfterMillis})
	b := core.MustBudget(core.PerSecond(100), core.WithBurst(50), core.WithMaxInFlight(100))
	c := &http.Client{Transport: core.NewTransport(nil, b)}
	res := runBatch(t, c, srv.URL+"/v1/items", 500, 100)
	ideal := time.Duration(500-50) * (10 * time.Millisecond) // 4.5 s
	t.Logf("makespan %v (ideal %v), %d refused, peak in flight %d", res.makespan, ideal, res.refused, srv.PeakInFlight())
	if res.refused != 0 || res.failed != 0 {
		t.Fatalf("%d 429s, %d failed calls; want none at the server's own rate", res.refused, res.failed)
	}
	if err := srv.CheckPacing(50, 10*time.Millisecond, 500*time.Millisecond); err != nil {
		t.Fatalf("arrivals break the pacing bound: %v", err)
	}
	// A lower bound, which load cannot break: no turn comes early.
	if res.makespan < ideal {
		t.Fatalf("makespan %v is under the GCRA ideal %v: the budget let calls go early", res.makespan, ideal)
	}
	if n := b.InFlight(); n != 0 {
		t.Fatalf("InFlight = %d after the batch", n)
	}
}

// misconfiguredCases are servers that enforce half the rate the client is
// configured with, with what the server allows for 500 requests.
var misconfiguredCases = []struct {
	name  string
	cfg   quotatest.Config
	ideal time.Duration
}{
	// A GCRA server (100/s, burst 10) that says only retry-after-ms on a
	// refusal, like Azure's and OpenAI's APIs: adaptive throttling finds
	// the rate.
	{"gcra retry-after-ms", quotatest.Config{Requests: 100, Period: time.Second, Burst: 10,
		Headers: quotatest.RetryAfterMillis}, 490 * 10 * time.Millisecond},
	// A fixed window of 100 per second reporting its quota GitHub-style
	// (X-RateLimit-Remaining and an epoch reset): the quota report pauses
	// the budget until the window turns, before any refusal.
	{"fixed window x-ratelimit epoch", quotatest.Config{Requests: 100, Period: time.Second,
		Algorithm: quotatest.FixedWindow, Headers: quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds},
		5 * time.Second},
}

func TestIntegrationMisconfiguredAtTwiceTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time integration test")
	}
	for _, tc := range misconfiguredCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newQuotaServer(t, tc.cfg)
			// The client is configured at twice the real limit: 200/s, burst 20.
			b := core.MustBudget(core.PerSecond(200), core.WithBurst(20))
			c := &http.Client{Transport: core.NewTransport(nil, b)}
			res := runBatch(t, c, srv.URL+"/v1/items", 500, 100)
			share := float64(res.refused) / float64(res.attempts)
			t.Logf("makespan %v (server-limited ideal %v, ×%.2f), %d of %d attempts refused (%.1f%%)",
				res.makespan, tc.ideal, float64(res.makespan)/float64(tc.ideal), res.refused, res.attempts, 100*share)
			if res.failed != 0 {
				t.Fatalf("%d calls never succeeded", res.failed)
			}
			// The bounds (makespan within 5 %, few refusals) hold in virtual
			// time: TestSynctestMisconfiguredAtTwiceTheLimit. Here a loaded
			// machine bunches sends into refusals, so the check is only that
			// the budget found the limit at all: a client pacing at the rate
			// it was configured with, twice the server's, has about half its attempts
			// refused.
			if share >= 0.3 {
				t.Fatalf("429 share %.1f%% ≥ 30%%: feedback and throttling did not find the limit", 100*share)
			}
		})
	}
}

func TestIntegrationServerPauseHoldsEveryCaller(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time integration test")
	}
	srv := newQuotaServer(t, quotatest.Config{Requests: 1000, Period: time.Second,
		Headers: quotatest.RetryAfterMillis})
	b := core.MustBudget(core.PerSecond(50))
	c := &http.Client{Transport: core.NewTransport(nil, b)}
	// Spend the burst, then the server pauses for 2 s: the first caller to
	// see it (a 429 with retry-after-ms) pauses the budget for everyone.
	for range 50 {
		resp, err := c.Get(srv.URL + "/warm")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	srv.PauseFor(2 * time.Second)
	pauseStart := time.Now()
	srv.Reset()
	res := runBatch(t, c, srv.URL+"/v1/items", 60, 20)
	arr := srv.Arrivals()
	var during, refusedDuring int
	var firstAfter time.Time
	for _, a := range arr {
		if a.At.Before(pauseStart.Add(2 * time.Second)) {
			during++
			if a.Status != http.StatusOK {
				refusedDuring++
			}
		} else if firstAfter.IsZero() || a.At.Before(firstAfter) {
			firstAfter = a.At
		}
	}
	t.Logf("%d arrivals during the pause (%d refused), first after it at +%v, makespan %v",
		during, refusedDuring, firstAfter.Sub(pauseStart), res.makespan)
	// Only the first burst (sent before any caller saw the pause) may reach
	// the server during it: 20 workers at most, one request each.
	if during > 20 {
		t.Fatalf("%d requests reached the server during its pause; want at most the first burst of 20", during)
	}
	if res.failed != 0 {
		t.Fatalf("%d calls failed", res.failed)
	}
	// At the pause's end exactly in virtual time: TestSynctestServerPauseHoldsEveryCaller.
	// Here only that the callers resumed: when is the machine's to decide.
	if firstAfter.IsZero() {
		t.Fatal("no request reached the server after its pause")
	}
}
