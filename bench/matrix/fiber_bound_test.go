package matrix

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// What a client can reach on fiber's sliding window as the matrix mounts
// it (Max L = Rate per 1 s Expiration; its rule is in doc.go and
// fiberRule). With a one-second window on a whole-second clock the
// previous window's weight is always 1, and refused requests count: a
// request in window k is admitted iff h(k−1) + its rank in window k ≤ L,
// h being every request the window saw. So a(k) ≤ L − h(k−1) ≤ L − a(k−1):
// any two consecutive windows admit at most L together, and windows
// 0 … m at most L·⌈(m+1)/2⌉. The batch's N = 500 at L = 100 needs nine
// windows: its last call goes no sooner than window 8 begins, 8 − φ
// seconds after a batch that starts φ into window 0 — 2.00× the ideal of
// 4 s in virtual time (φ = 0), 1.75–2.00× over loopback. A client reaches
// it by sending L at the start of every other window and nothing between.
//
// No client that does not know the rule in advance can send nothing in
// window 1: until then fiber's answers are a fixed window's to the byte
// (Remaining L−1 … 0, Reset 1, a bare "Retry-After: 1"), and a client that
// waits out window 1 on a fixed window is twice as slow there. One request
// in window 1 costs window 2 one admission, and the batch a window:
// windows 0 … 8 then admit at most 499, and the floor is 9 − φ seconds,
// 2.25× in virtual time (2.00–2.25× over loopback).
//
// The pause scenario: the 166th admission, which starts the pause, comes
// in window 2 at the soonest (windows 0 and 1 admit 100 together); the
// 2 s pause covers window 3 (fiber sees none of its requests), and from
// window 4 the 334 left need four windows of every other: window 10, again
// 10 − φ seconds, 1.67× the ideal + pause of 6 s (1.50–1.67× over
// loopback). The 2× and learned scenarios have the exact one's bound.
//
// TestFiberSlidingBound computes the first two by exhaustive search over
// every window's count of requests, and runs the client that reaches the
// bounds against fiberRule in virtual time, without and with the pause.
func TestFiberSlidingBound(t *testing.T) {
	w := Issue14
	windows := func(probeInWindow1 bool) int {
		for m := 0; ; m++ {
			if fiberMostAdmitted(w.Rate, m, probeInWindow1) >= w.N {
				return m + 1
			}
		}
	}
	t.Logf("fiber's sliding window, %d calls at %d per window: at least 9 windows (8 − φ s: 2.00× the ideal of 4 s in virtual time, 1.75–2.00× over loopback); "+
		"10 with a request in window 1 (2.25×); after the pause, 10 − φ s (1.67× the ideal + pause of 6 s)", w.N, w.Rate)
	if got := windows(false); got != 9 {
		t.Errorf("the batch needs %d of fiber's windows, want 9 (8 − φ s: 2.00× in virtual time)", got)
	}
	if got := windows(true); got != 10 {
		t.Errorf("with a request in window 1 the batch needs %d windows, want 10 (9 − φ s: 2.25×)", got)
	}
	for _, phase := range []time.Duration{0, 300 * time.Millisecond, 700 * time.Millisecond} {
		// fiber's clock ticks phase past each second; the batch starts on a
		// whole second, so φ = 1 − phase (0 when phase is 0).
		phi := (time.Second - phase) % time.Second
		bound := 8*time.Second - phi
		if got := everyOtherWindow(t, phase, false); got != bound {
			t.Errorf("fiber's clock at +%v: the client sending every other window finished in %v, want the bound %v", phase, got, bound)
		}
		if got := everyOtherWindow(t, phase, true); got != bound+2*time.Second {
			t.Errorf("fiber's clock at +%v, paused: the client sending every other window finished in %v, want the bound %v",
				phase, got, bound+2*time.Second)
		}
	}
}

// fiberMostAdmitted is the most fiber's rule (limit L, weight 1, refused
// requests counted) admits in windows 0 … m, over every count of requests
// h(k) ∈ [0, 2L] in each window, window 1's at least 1 if probeInWindow1:
// a search over h(k−1), the only state that carries from one window to the
// next.
func fiberMostAdmitted(limit, m int, probeInWindow1 bool) int {
	const none = -1
	best := make([]int, 2*limit+1) // by h(k−1): the most admitted so far
	for h := range best {
		best[h] = none
	}
	best[0] = 0 // before window 0: nothing
	for k := 0; k <= m; k++ {
		next := make([]int, len(best))
		for h := range next {
			next[h] = none
		}
		for prev, sofar := range best {
			if sofar == none {
				continue
			}
			for h := range next {
				if k == 1 && probeInWindow1 && h == 0 {
					continue
				}
				a := min(h, max(0, limit-prev))
				next[h] = max(next[h], sofar+a)
			}
		}
		best = next
	}
	most := 0
	for _, v := range best {
		most = max(most, v)
	}
	return most
}

// everyOtherWindow runs the batch, in virtual time, against fiberRule with
// its clock ticking phase past each second (the server paused as the pause
// scenario's is, if pause), with the client that reaches the bound: it
// knows the rule and sends every call left, up to Rate, at once at the
// start of every other window of fiber's, and after a pause at the first
// window that starts once it is over, nothing between. It returns the
// makespan. Every call must be admitted, but for those the pause refused.
func everyOtherWindow(t *testing.T, phase time.Duration, pause bool) time.Duration {
	var makespan time.Duration
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(virtualStart))
		w := Issue14
		srv, err := fiberSlidingRule(phase).start(serverEnv{w: w, pause: pause, inProcess: true})
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: srv.Base}
		start := time.Now()
		window := start.Truncate(time.Second).Add(phase) // window 0's start
		if window.After(start) {
			window = window.Add(-time.Second)
		}
		var mu sync.Mutex
		var left []int
		for id := 1; id <= w.N; id++ {
			left = append(left, id)
		}
		for len(left) > 0 {
			var wg sync.WaitGroup
			var refused []int
			for _, id := range left[:min(w.Rate, len(left))] {
				wg.Go(func() {
					resp, err := hc.Get(srv.URL + callPath(id))
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						mu.Lock()
						refused = append(refused, id)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			makespan = time.Since(start)
			_, pauseAt := srv.Arrivals()
			if len(refused) > 0 && (pauseAt.IsZero() || time.Since(pauseAt) >= w.Pause) {
				t.Fatalf("%d calls refused, not by the pause", len(refused))
			}
			left = append(refused, left[min(w.Rate, len(left)):]...)
			window = window.Add(2 * time.Second)
			if end := pauseAt.Add(w.Pause); !pauseAt.IsZero() && window.Before(end) {
				window = window.Add(end.Sub(window).Truncate(time.Second))
				if window.Before(end) {
					window = window.Add(time.Second)
				}
			}
			time.Sleep(time.Until(window))
		}
	})
	return makespan
}
