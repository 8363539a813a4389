package quotatest

import (
	"testing"
	"time"
)

var (
	t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	ms = time.Millisecond
)

// step is one call of take at t0+at, and what it and state must return.
type step struct {
	at        time.Duration
	ok        bool
	wait      time.Duration // on refusal
	remaining int           // state after the call
	reset     time.Duration // state after the call
}

func runSteps(t *testing.T, l *limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		now := t0.Add(s.at)
		ok, wait := l.take(now)
		if ok != s.ok || wait != s.wait {
			t.Fatalf("step %d: take(t0+%v) = %v, %v; want %v, %v", i, s.at, ok, wait, s.ok, s.wait)
		}
		if rem, reset := l.state(now); rem != s.remaining || reset != s.reset {
			t.Fatalf("step %d: state(t0+%v) = %d, %v; want %d, %v", i, s.at, rem, reset, s.remaining, s.reset)
		}
	}
}

func mustLimiter(t *testing.T, cfg Config) *limiter {
	t.Helper()
	cfg, err := cfg.normalize()
	if err != nil {
		t.Fatal(err)
	}
	l := newLimiter(cfg)
	return &l
}

func TestLimiterGCRA(t *testing.T) {
	l := mustLimiter(t, Config{Requests: 5, Period: time.Second}) // T = 200ms, burst 5
	runSteps(t, l, []step{
		{at: 0, ok: true, remaining: 4, reset: 200 * ms},
		{at: 0, ok: true, remaining: 3, reset: 400 * ms},
		{at: 0, ok: true, remaining: 2, reset: 600 * ms},
		{at: 0, ok: true, remaining: 1, reset: 800 * ms},
		{at: 0, ok: true, remaining: 0, reset: 1000 * ms},
		{at: 0, ok: false, wait: 200 * ms, remaining: 0, reset: 1000 * ms}, // refusals spend nothing
		{at: 100 * ms, ok: false, wait: 100 * ms, remaining: 0, reset: 900 * ms},
		{at: 200 * ms, ok: true, remaining: 0, reset: 1000 * ms},
		{at: 500 * ms, ok: true, remaining: 0, reset: 900 * ms},
		{at: 3 * time.Second, ok: true, remaining: 4, reset: 200 * ms}, // idle refills to the burst, no more
	})
}

func TestLimiterGCRABurst(t *testing.T) {
	l := mustLimiter(t, Config{Requests: 10, Period: time.Second, Burst: 2}) // T = 100ms
	runSteps(t, l, []step{
		{at: 0, ok: true, remaining: 1, reset: 100 * ms},
		{at: 0, ok: true, remaining: 0, reset: 200 * ms},
		{at: 0, ok: false, wait: 100 * ms, remaining: 0, reset: 200 * ms},
		{at: 150 * ms, ok: true, remaining: 0, reset: 150 * ms},
		{at: 250 * ms, ok: true, remaining: 0, reset: 150 * ms},
	})
}

func TestLimiterFixedWindow(t *testing.T) {
	l := mustLimiter(t, Config{Requests: 3, Period: time.Second, Algorithm: FixedWindow})
	runSteps(t, l, []step{
		{at: 300 * ms, ok: true, remaining: 2, reset: 700 * ms},
		{at: 300 * ms, ok: true, remaining: 1, reset: 700 * ms},
		{at: 900 * ms, ok: true, remaining: 0, reset: 100 * ms},
		{at: 900 * ms, ok: false, wait: 100 * ms, remaining: 0, reset: 100 * ms},
		{at: 1000 * ms, ok: true, remaining: 2, reset: time.Second}, // a new aligned window
		{at: 1999 * ms, ok: true, remaining: 1, reset: ms},
		{at: 1999 * ms, ok: true, remaining: 0, reset: ms},
		{at: 1999 * ms, ok: false, wait: ms, remaining: 0, reset: ms},
		{at: 1500 * ms, ok: false, wait: 500 * ms, remaining: 0, reset: 500 * ms}, // a clock going back stays in the window
	})
}

func TestLimiterSlidingWindow(t *testing.T) {
	// 4 per second: the estimate is prev×(1−e/1s) + used, and a request fits while the
	// estimate counting it is at most 4.
	l := mustLimiter(t, Config{Requests: 4, Period: time.Second, Algorithm: SlidingWindow})
	runSteps(t, l, []step{
		{at: 0, ok: true, remaining: 3, reset: time.Second},
		{at: 0, ok: true, remaining: 2, reset: time.Second},
		{at: 0, ok: true, remaining: 1, reset: time.Second},
		{at: 0, ok: true, remaining: 0, reset: time.Second},
		// Full: not before the next window, and then once 4×(1−e) ≤ 3, e = 250ms.
		{at: 0, ok: false, wait: 1250 * ms, remaining: 0, reset: time.Second},
		// 4×0.9 + 1 = 4.6 > 4: 150ms more, until 4×0.75 + 1 = 4.
		{at: 1100 * ms, ok: false, wait: 150 * ms, remaining: 0, reset: 900 * ms},
		{at: 1250 * ms, ok: true, remaining: 0, reset: 750 * ms},
		{at: 1500 * ms, ok: true, remaining: 0, reset: 500 * ms}, // 4×0.5 + 2 = 4
		{at: 1600 * ms, ok: false, wait: 150 * ms, remaining: 0, reset: 400 * ms},
		// A new window: the 2 of the last one weigh 2×(1−e).
		{at: 2000 * ms, ok: true, remaining: 1, reset: time.Second},
		{at: 2500 * ms, ok: true, remaining: 1, reset: 500 * ms},
		// A whole window idle: nothing of the past counts.
		{at: 4100 * ms, ok: true, remaining: 3, reset: 900 * ms},
		{at: 4050 * ms, ok: true, remaining: 2, reset: 950 * ms}, // a clock going back stays in the window
	})
}

func TestLimiterSlidingWindowLongPeriod(t *testing.T) {
	// Counts × window lengths beyond 64 bits: a million per 10,000 hours.
	l := mustLimiter(t, Config{Requests: 1_000_000, Period: 10_000 * time.Hour, Algorithm: SlidingWindow})
	l.windowStart, l.prev, l.used = t0.Truncate(l.period), 1_000_000, 500_000
	now := l.windowStart.Add(l.period / 2) // 1e6×0.5 + 500,000: full
	if ok, wait := l.take(now); ok || wait != 36*time.Second {
		t.Fatalf("take at half the window = %v, %v; want false, 36s (a millionth of the window)", ok, wait)
	}
	if ok, _ := l.take(now.Add(36*time.Second - 1)); ok {
		t.Fatal("take a nanosecond before the wait admitted")
	}
	if ok, _ := l.take(now.Add(36 * time.Second)); !ok {
		t.Fatal("take after the wait refused")
	}
	l.used--
	if rem, _ := l.state(now.Add(l.period / 4)); rem != 250_000 {
		t.Fatalf("state three quarters in: remaining %d, want 250000", rem)
	}
	if ok, _ := l.take(now.Add(l.period / 4)); !ok {
		t.Fatal("take three quarters in refused")
	}
}

func TestLimiterClear(t *testing.T) {
	for _, alg := range []Algorithm{GCRA, FixedWindow, SlidingWindow} {
		l := mustLimiter(t, Config{Requests: 1, Period: time.Minute, Algorithm: alg})
		if ok, _ := l.take(t0); !ok {
			t.Fatalf("%v: first take refused", alg)
		}
		if ok, _ := l.take(t0); ok {
			t.Fatalf("%v: second take admitted before clear", alg)
		}
		l.clear()
		if ok, _ := l.take(t0); !ok {
			t.Fatalf("%v: take after clear refused", alg)
		}
	}
}
