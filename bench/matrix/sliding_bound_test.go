package matrix

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// What a client can reach on a sliding-window counter (quotatest's
// SlidingWindow, go-chi/httprate, fiber's sliding limiter): L requests per
// window W, a request admitted while prev×(1−e) + current, counting it, is
// at most L (e: the fraction of the current window gone).
//
// Window 0 (prev = 0) admits L at once. In window k ≥ 1, at e, what it has
// admitted is n_k(e) ≤ L − c_{k−1}(1−e), where c_{k−1} ≤ L is what window
// k−1 admitted. By induction, everything admitted by window k's e is
// S_{k−2} + c_{k−1} + n_k(e) ≤ L(k−1) + c_{k−1}·e + L ≤ L(k + e): the
// server admits at most L per window since the start of window 0, after
// the first L. A batch of N that starts φ (a fraction of W) into window 0
// ends no sooner than (N/L − φ)·W: for the matrix's N = 500, L = 100,
// W = 1 s, batches starting on a whole second (virtual time: φ = 0),
// 5 s, which is 1.25× the ideal (N − L)/rate = 4 s. Over loopback φ falls
// anywhere in [0, 1): the bound is 4–5 s, 1.00–1.25×. At exactly L per W
// the counter sits at L and a request a hair early is refused, which is
// why a client pacing at the rate (x/time/rate) draws about a fifth of
// its calls refused there.
//
// The bound is the server's, whatever rate a client is configured with:
// it holds for the 2× scenario as it is (1.25×), and a client configured
// at half the rate is held to the configured limit's ideal instead.
//
// The pause scenario is another server: it pauses Pause once a third of
// the batch is admitted, and forgets everything spent when the pause ends.
// Window 1 admits its 66th call (the 166th) at e = 0.66; the pause runs to
// 3.66 s; the fresh quota admits L at once, all counted in window 3; from
// window 4 on, at most L per window again: the 234 left end at 6.34 s,
// 1.057× the (ideal + pause) of 6 s, just above the issue's 1.05× want.
//
// TestSlidingWindowBound measures both with a greedy client, which sends
// each call, and on a refusal sends it again 1 ms later: it finishes within
// 1 % of the bound (5.031 s, 6.354 s), and no client can finish sooner.
func TestSlidingWindowBound(t *testing.T) {
	for _, tc := range []struct {
		pause bool
		bound time.Duration // (N/L − φ)·W with φ = 0; after the pause, as above
		ideal time.Duration
	}{
		{false, 5 * time.Second, ideal(Issue14.N, Issue14.Rate, Issue14.Rate)},
		{true, 6340 * time.Millisecond, ideal(Issue14.N, Issue14.Rate, Issue14.Rate) + Issue14.Pause},
	} {
		t.Run(map[bool]string{false: "exact, 2x", true: "pause"}[tc.pause], func(t *testing.T) {
			t.Parallel()
			makespan := greedySliding(t, tc.pause, 0)
			t.Logf("greedy client: %v = %.3f× ideal; bound %v = %.3f×", makespan, float64(makespan)/float64(tc.ideal),
				tc.bound, float64(tc.bound)/float64(tc.ideal))
			// (Above the bound by the 1 ms it waits between tries, once per
			// window's run of refusals, and the counter's integer weighting.)
			if makespan < tc.bound || makespan > tc.bound+tc.bound/100 {
				t.Errorf("greedy client finished in %v, want the bound %v (+ at most 1%%)", makespan, tc.bound)
			}
		})
	}
}

// greedySliding runs the matrix's batch against a sliding-window counter
// (paused as the pause scenario's server is, if pause) with the greedy
// client, started phase into a window, and returns its makespan.
func greedySliding(t *testing.T, pause bool, phase time.Duration) time.Duration {
	var makespan time.Duration
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(virtualStart.Add(phase)))
		w := Issue14
		var (
			p        *quotatest.Provider
			mu       sync.Mutex
			admitted int
		)
		handler := http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			if admitted++; pause && admitted == w.pauseAfter() {
				p.PauseFor(w.Pause)
			}
			mu.Unlock()
		})
		var err error
		p, err = quotatest.New(quotatest.Config{Requests: w.Rate, Period: time.Second,
			Algorithm: quotatest.SlidingWindow, Headers: quotatest.RetryAfterSeconds, Handler: handler})
		if err != nil {
			t.Fatal(err)
		}
		makespan = greedyBatch(t, w, p, "http://quotatest.invalid")
	})
	return makespan
}

// greedyBatch sends w's calls from w.Workers goroutines to the server h,
// each call again 1 ms after every refusal until it is admitted, and
// returns the time until the last was: the greedy client of
// greedySliding and greedyOn.
//
// Each try calls h in the worker's goroutine, its request built once per
// call, with no http.Client or transport between: in a bubble no virtual
// time passes in either, so the server decides the same tries at the same
// instants, and the makespan is the same; but the hundreds of thousands
// of tries the refusals make (every worker, every millisecond) cost a
// quarter of what they did through an http.Client and the in-process
// transport, which under -race was most of the package's test time.
func greedyBatch(t *testing.T, w Workload, h http.Handler, base string) time.Duration {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w.Workers {
		wg.Go(func() {
			for id := next.Add(1); id <= int64(w.N); id = next.Add(1) {
				req, err := http.NewRequest(http.MethodGet, base+callPath(int(id)), nil)
				if err != nil {
					t.Error(err)
					return
				}
				for {
					rw := greedyWriter{header: http.Header{}}
					h.ServeHTTP(&rw, req)
					if rw.status == 0 || rw.status == http.StatusOK {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// greedyWriter is the http.ResponseWriter greedyBatch's tries are served
// with: it keeps the status, and drops the headers and body.
type greedyWriter struct {
	header http.Header
	status int
}

func (w *greedyWriter) Header() http.Header { return w.header }

func (w *greedyWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *greedyWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}
