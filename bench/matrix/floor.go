package matrix

import "time"

// The floor of a sliding-window cell, for the batch's phase in the
// server's windows: the makespan of a greedy client, which sends each call
// the instant the counter admits it — within 1 % of the bound below, which
// no client beats.
//
// A sliding-window counter admits at most L per window since the start of
// the window the batch starts in, after the first L (the proof:
// sliding_bound_test.go), so a batch that starts φ into its window ends no
// sooner than (N/L − φ)·W: 1.00–1.25× the ideal for the matrix's batch,
// depending on φ alone. In virtual time every batch starts on a whole
// second (φ = 0); over loopback φ is wherever the batch happens to start
// in the server's windows — quotatest's are aligned to the Unix second,
// httprate's (v0.16) to the instant its limiter was built, just before the
// batch. A cell's floor says which of those it was given.
//
// After a pause the floor counts exactly w.pauseAfter() admissions before
// it; the servers start the pause once they admitted that one, while
// requests that reached them at the same instant are still being decided,
// so a burst that reaches the server as the pause begins may have a few
// more admitted, and its cell come in a little under the floor.

// slidingWindows is where a server's sliding windows turn: at origin + k ×
// length; and whether it rounds its estimate (httprate: a request is
// admitted while round(estimate) + 1 ≤ L, half a request more than an
// exact counter lets through).
type slidingWindows struct {
	origin time.Time
	length time.Duration
	rounds bool
}

// phase is how far into its window t falls.
func (s slidingWindows) phase(t time.Time) time.Duration {
	d := t.Sub(s.origin) % s.length
	if d < 0 {
		d += s.length
	}
	return d
}

// floor is the greedy makespan of w's batch against the counter of
// w.Rate per window, started phase into one of its windows; with pause,
// against the pause scenario's server, which pauses w.Pause at its
// w.pauseAfter()-th admission and forgets what was spent when the pause
// ends (quotatest's; httprate's counter, whose pause the matrix plays in
// front of it, saw nothing admitted in the window before the pause's end,
// which comes to the same). It plays the greedy client of
// sliding_bound_test.go with exact instants: each call sent the instant
// the counter admits it. The counter is quotatest's (limiter.go), or
// httprate's rounding one, in integer nanoseconds: a request is admitted
// at e into a window while 2·(prev·(W − e) + used·W) ≤ budget, where
// budget is 2(L − 1)·W exact, (2L − 1)·W − 1 rounding (its estimate
// strictly under L − ½).
func (s slidingWindows) floor(w Workload, phase time.Duration, pause bool) time.Duration {
	L, W := int64(w.Rate), int64(s.length)
	budget := 2 * (L - 1) * W
	if s.rounds {
		budget = (2*L-1)*W - 1
	}
	t := int64(phase) // window 0 starts at 0
	ws, used, prev := int64(0), int64(0), int64(0)
	last := t
	for admitted := 0; admitted < w.N; {
		if s := t / W * W; s > ws { // roll to the window that holds t
			prev = 0
			if s-ws == W {
				prev = used
			}
			ws, used = s, 0
		}
		room := budget - 2*used*W      // what 2·prev·(W − e) may be
		if room >= 2*prev*(W-(t-ws)) { // it fits: admitted at t
			used++
			admitted++
			last = t
			if pause && admitted == w.pauseAfter() {
				t += int64(w.Pause)
				ws, used, prev = t/W*W, 0, 0 // the quota whole when the pause ends
			}
			continue
		}
		if room >= 0 && prev > 0 { // later in this window, as prev's weight falls
			if at := ws + W - room/(2*prev); at < ws+W {
				t = at
				continue
			}
		}
		// In the next window, where used weighs as prev.
		t = ws + W + max(0, W-budget/(2*max(used, 1)))
	}
	return time.Duration(last) - phase
}
