package matrix

import (
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// small is a workload for the loopback checks: a fraction of a second.
var small = Workload{N: 60, Workers: 12, Rate: 50, Burst: 5, Pause: 300 * time.Millisecond, MaxTries: 6}

// startRedis starts a redis-server for the test, or skips it when there is
// none (fails it under CI=true, as the redisstore tests do).
func startRedis(t *testing.T) string {
	t.Helper()
	r, err := StartRedis()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(r.Stop)
	return r.Addr
}

// TestLibraryServersLimitAndSayWhen checks each real limiter over loopback:
// a burst of its limit plus a second's worth at once is partly refused,
// every refusal is a 429 with a Retry-After, and the recorder saw every
// request with the status it was sent. (Twice a GCRA server's burst of 5 was
// all admitted, now and then, when the busy machine spread the ten requests
// over the 100 ms that refill five; a second's worth more needs the burst to
// take a second.)
func TestLibraryServersLimitAndSayWhen(t *testing.T) {
	addr := startRedis(t)
	for _, spec := range []ServerSpec{httprateServer, redisRateServer, fiberServer("fiber fixed", false), fiberServer("fiber sliding", true)} {
		t.Run(spec.Name, func(t *testing.T) {
			srv, err := spec.start(serverEnv{w: small, redisAddr: addr, key: "check:" + spec.Name})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			hc := &http.Client{Transport: srv.Base, Timeout: 10 * time.Second}
			n := spec.Burst(small) + small.Rate
			statuses := make([]int, n)
			retryAfter := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					if resp, err := get(context.Background(), hc, srv.URL+callPath(i)); err == nil {
						statuses[i], retryAfter[i] = resp.StatusCode, resp.Header.Get("Retry-After")
					}
				})
			}
			wg.Wait()
			refused := 0
			for i, s := range statuses {
				switch {
				case s == http.StatusTooManyRequests:
					refused++
					if retryAfter[i] == "" {
						t.Errorf("call %d: 429 without Retry-After", i)
					}
				case s != http.StatusOK:
					t.Errorf("call %d: status %d", i, s)
				}
			}
			if refused == 0 || refused == n {
				t.Errorf("%d of %d refused, want some but not all", refused, n)
			}
			arrivals, _ := srv.Arrivals()
			if len(arrivals) != n {
				t.Fatalf("recorded %d arrivals, want %d", len(arrivals), n)
			}
			seen := 0
			for _, a := range arrivals {
				if a.Status == http.StatusTooManyRequests {
					seen++
				}
				if a.Call < 0 || a.Call >= n {
					t.Errorf("arrival for call %d, want 0..%d", a.Call, n-1)
				}
			}
			if seen != refused {
				t.Errorf("recorded %d refusals, the client got %d", seen, refused)
			}
		})
	}
}

// TestLibraryCellsRun runs the pause scenario through the transport against
// each real limiter: every call succeeds, no slot leaks, the pause is seen
// and the refused call retried.
func TestLibraryCellsRun(t *testing.T) {
	env := &Env{Workload: small, RedisAddr: startRedis(t), Slack: 5 * time.Millisecond}
	pause, _ := ScenarioByName("pause")
	transport, _ := ClientByName("headgate transport")
	for _, spec := range []ServerSpec{httprateServer, redisRateServer, fiberServer("fiber fixed", false)} {
		t.Run(spec.Name, func(t *testing.T) {
			r, err := env.Run(context.Background(), Cell{Server: spec, Scenario: pause, Client: transport})
			if err != nil {
				t.Fatal(err)
			}
			if r.Skipped != "" || r.Failed != 0 || r.Leaked != 0 || !r.Paused || !r.RetrySeen || r.Sent < small.N {
				t.Errorf("got %+v; want every call done, nothing leaked, the pause seen and its refused call retried", r)
			}
		})
	}
}

// TestFiberClosesAtOnce: a fiber server closed the moment it started (as
// a skipped cell's is) still shuts down.
func TestFiberClosesAtOnce(t *testing.T) {
	for range 20 {
		srv, err := fiberServer("fiber", false).start(serverEnv{w: small})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			srv.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close has not returned after 10s")
		}
	}
}
