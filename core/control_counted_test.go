package core

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// countingWindow is a server that counts refused requests against its
// quota: gofiber/fiber's sliding-window limiter as it runs with a
// one-second window on its whole-second clock, where the window before
// the current one weighs 1. A request in window k (the Unix second) is
// admitted iff every request window k−1 saw, refused ones too, plus its
// own rank in window k is at most limit; a window that saw no request
// carries nothing. (bench/matrix checks the same rule against fiber
// itself.) It answers like fiber: X-RateLimit-Limit, -Remaining and a
// -Reset of "1" on an admission, a bare "Retry-After: 1" on a refusal.
type countingWindow struct {
	limit   int
	latency time.Duration
	jitter  func(n int) time.Duration // if set, the nth request's answer takes this much more on its way back

	mu         sync.Mutex
	window     int64 // the current window, a Unix second; 0: none yet
	prev, curr int   // requests seen in the window before it and in it
	refused    int
	n          int // requests seen
}

func (s *countingWindow) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	time.Sleep(s.latency)
	s.mu.Lock()
	k := time.Now().Unix()
	switch {
	case s.window == 0:
		s.window = k
	case k == s.window+1:
		s.prev, s.curr, s.window = s.curr, 0, k
	case k > s.window+1:
		s.prev, s.curr, s.window = 0, 0, k
	}
	s.curr++
	remaining := s.limit - s.prev - s.curr
	if remaining < 0 {
		s.refused++
	}
	s.n++
	n := s.n
	s.mu.Unlock()
	if s.jitter != nil {
		time.Sleep(s.jitter(n))
	}
	w := httptest.NewRecorder()
	if remaining < 0 {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	} else {
		w.Header().Set("X-RateLimit-Limit", strconv.Itoa(s.limit))
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		w.Header().Set("X-RateLimit-Reset", "1")
		w.WriteHeader(http.StatusOK)
	}
	resp := w.Result()
	resp.Request = r
	return resp, nil
}

// fiber's sliding window counts every request, refused ones too, and
// carries a spent window whole into the next: a probe into the window
// after a spent one is refused and costs the window after it one
// admission. The floor for a client that must learn this (it cannot tell
// the server from a fixed window before its window 1) is 9 s for the
// issue's batch started on a window's turn, 2.25× the ideal
// (bench/matrix/fiber_bound_test.go): 100 in window 0, one refused probe
// in window 1, then exactly what each window has left — 99 and 1 in turn —
// and nothing refused. The budget learns that refusals count (watchCounted)
// from the probe after the refused one, admitted a window later yet short
// of whole, and from then waits out each spent window and probes only at
// its end, even when the probe that finds the window's end takes its last
// token (before: 10.04 s and 11 429s, the probe into every other window
// refused; without the wait after a probe that took the last token, one
// more).
func TestBatchCountingWindowToldExactRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toYear2026()
		srv := &countingWindow{limit: 100, latency: time.Millisecond}
		refused, makespan := runCounting(t, srv)
		t.Logf("%d 429s, makespan %v (the floor 9s)", refused, makespan)
		if makespan < 9*time.Second {
			t.Errorf("makespan %v, below the floor of 9s: the server is not fiber's rule", makespan)
		}
		if makespan > 9*time.Second+50*time.Millisecond || refused > 2 {
			t.Errorf("%d 429s, makespan %v; want 2 at most (the probe after the first burst, the one in window 1) and within 50ms of the floor 9s",
				refused, makespan)
		}
	})
}

// The same batch with answers that take 1 ms longer on their way back by
// turns (the nth request's n mod j ms), as a loaded server's and network's
// do: the answer of the probe at a window's predicted end may come after
// the reported reset, and the answers of the burst it releases after the
// pace's next turn. Neither may cost a refusal: the others stay held until
// the probe's answer comes, and once the window's allowance (the probe's
// Remaining) has gone they are held for its end, whenever the answer
// reporting it spent comes (before: up to 10.05 s, 6 429s).
func TestBatchCountingWindowSlowAnswers(t *testing.T) {
	for _, j := range []int{2, 3, 5, 7} {
		t.Run(strconv.Itoa(j), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toYear2026()
				srv := &countingWindow{limit: 100, latency: time.Millisecond,
					jitter: func(n int) time.Duration { return time.Duration(n%j) * time.Millisecond }}
				refused, makespan := runCounting(t, srv)
				t.Logf("%d 429s, makespan %v (the floor 9s)", refused, makespan)
				if makespan > 9*time.Second+50*time.Millisecond || refused > 2 {
					t.Errorf("%d 429s, makespan %v; want 2 at most and within 50ms of the floor 9s", refused, makespan)
				}
			})
		})
	}
}

// Over loopback on a loaded machine the batch's goroutines take their
// first turns over tens of ms, and the first burst's requests reach the
// server in another order than they left: their answers' Remaining rises
// from one to the next, which reads as a window turning within the burst,
// and the windows predicted from it end up to the burst's spread before
// its last request's windows do. The probe two predicted windows after
// the burst then comes a little under two windows after the last
// admission, too early for its answer to show refusals counted
// (watchCounted), and the budget took the server for a continuous quota:
// 10.04 s and 11 429s in a third of these runs, as in a third of the
// bench's runs against fiber itself (2.5–2.76× the ideal). That probe goes
// the few ms later that make it two windows (windows.countable).
func TestBatchCountingWindowLateBurst(t *testing.T) {
	for _, spread := range []time.Duration{20 * ms, 25 * ms, 30 * ms, 35 * ms, 40 * ms} {
		for _, j := range []int64{2, 3, 4, 5, 7} {
			t.Run(fmt.Sprintf("%v/%d", spread, j), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toYear2026()
					srv := &countingWindow{limit: 100, latency: time.Millisecond}
					start := time.Now()
					var n atomic.Int64
					shuffled := wire{next: srv, late: func(sent time.Time) time.Duration {
						if sent.Sub(start) > spread {
							return 0
						}
						return time.Duration(n.Add(1)%j) * time.Millisecond // the nth: n mod j ms late
					}}
					refused, makespan := runCountingOver(t, srv, shuffled, spread)
					t.Logf("%d 429s, makespan %v (the floor 9s)", refused, makespan)
					if makespan > 9*time.Second+50*time.Millisecond || refused > 2 {
						t.Errorf("%d 429s, makespan %v; want 2 at most and within 50ms of the floor 9s", refused, makespan)
					}
				})
			})
		}
	}
}

// runCounting sends the batch, 500 calls from 100 goroutines, each
// retried until admitted, through a budget told the server's exact rate
// and burst, and returns the 429s the server sent and the makespan.
func runCounting(t *testing.T, srv *countingWindow) (refused int, makespan time.Duration) {
	return runCountingOver(t, srv, srv, 0)
}

// runCountingOver is runCounting over rt, the way to srv, with the
// goroutines starting one after another over spread, the budget built
// with opts too.
func runCountingOver(t *testing.T, srv *countingWindow, rt http.RoundTripper, spread time.Duration, opts ...Option) (refused int, makespan time.Duration) {
	b, err := NewBudget(PerSecond(100), append([]Option{WithBurst(100)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: NewTransport(rt, b)}
	const n, workers = 500, 100
	start := time.Now()
	var next atomic.Int64
	var mu sync.Mutex
	var last time.Time
	var wg sync.WaitGroup
	for k := range workers {
		wg.Go(func() {
			time.Sleep(spread * time.Duration(k) / workers)
			for i := next.Add(1); i <= n; i = next.Add(1) {
				for {
					resp, err := client.Get("http://api.test/v1/call/" + strconv.FormatInt(i, 10))
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						mu.Lock()
						if now := time.Now(); now.After(last) {
							last = now
						}
						mu.Unlock()
						break
					}
				}
			}
		})
	}
	wg.Wait()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.refused, last.Sub(start)
}

// The evidence that refusals count is read from a probe's answer only: a
// probe goes alone, so the Remaining it finds short of whole is the
// server's count. An answer to a request sent beside others (a pause's
// end lets several go at once) finds it short by the others that reached
// the server first, and shows nothing.
func TestControlCountedOnlyFromAProbe(t *testing.T) {
	for _, alone := range []bool{true, false} {
		t.Run(strconv.FormatBool(alone), func(t *testing.T) {
			c := newControl(DefaultAdaptive())
			sent := 2013 * ms // the probe's, at the window's end
			if !alone {
				sent += ms // another request's, sent beside it
			}
			runCtl(t, &c, []ctlStep{
				{at: 1 * ms, sent: 0, status: 200, h: quota("0", "100", "1")},
				{at: 12 * ms, sent: 11 * ms, status: 429, h: http.Header{"Retry-After": {"1"}}}, // windowed
				{at: 1013 * ms, sent: 1012 * ms, status: 429, h: http.Header{"Retry-After": {"1"}}},
				{at: sent + ms, sent: sent, status: 200, h: quota("98", "100", "1"), check: func(t *testing.T, c *control, v verdict) {
					if c.counted != alone {
						t.Errorf("counted %v, want %v (sent alone: %v)", c.counted, alone, alone)
					}
				}},
			})
		})
	}
}

// Over loopback every window's burst, not only the first, reaches the
// server in another order than it left, and answers that come back out
// of order show Remaining rising from one send to the next within a
// window. Read as a turn, that put the windows' predicted end mid-window:
// the probe for the end of a window whose last token a probe had just
// taken went into the same, spent window — refused, and on fiber's rule,
// which counts refusals, short of an admission the window after (one
// refusal in every other window: 0.6–1.2 % 429s over loopback, told the
// exact rate). A rise is a turn only for a request sent once the answer
// of the lower Remaining had come (windows.ordered).
func TestBatchCountingWindowReorderedBursts(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toYear2026()
				srv := &countingWindow{limit: 100, latency: time.Millisecond}
				var n atomic.Uint64
				scatter := func(most time.Duration) time.Duration { // up to most, by a hash of the request's number
					x := (n.Add(1) + seed<<32) * 0x9E3779B97F4A7C15
					x ^= x >> 29
					return time.Duration(x%uint64(most/(100*time.Microsecond))) * 100 * time.Microsecond
				}
				shuffled := wire{next: srv,
					late: func(time.Time) time.Duration { return scatter(5 * ms) },
					back: func(time.Time) time.Duration { return scatter(2 * ms) }}
				refused, makespan := runCountingOver(t, srv, shuffled, 0, WithMaxInFlight(16))
				t.Logf("%d 429s, makespan %v (the floor 9s)", refused, makespan)
				if makespan > 9*time.Second+100*time.Millisecond || refused > 2 {
					t.Errorf("%d 429s, makespan %v; want 2 at most and within 100ms of the floor 9s", refused, makespan)
				}
			})
		})
	}
}
