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

func TestLimiterTokenBucket(t *testing.T) {
	l := mustLimiter(t, Config{Requests: 5, Period: time.Second, Burst: 3, Algorithm: TokenBucket}) // a token per 200ms
	runSteps(t, l, []step{
		{at: 0, ok: true, remaining: 2, reset: 200 * ms},
		{at: 0, ok: true, remaining: 1, reset: 400 * ms},
		{at: 0, ok: true, remaining: 0, reset: 600 * ms},
		{at: 0, ok: false, wait: 200 * ms, remaining: 0, reset: 600 * ms}, // refusals spend nothing
		{at: 100 * ms, ok: false, wait: 100 * ms, remaining: 0, reset: 500 * ms},
		{at: 200 * ms, ok: true, remaining: 0, reset: 600 * ms},
		{at: 700 * ms, ok: true, remaining: 1, reset: 300 * ms},        // 2.5 tokens back, one taken
		{at: 5 * time.Second, ok: true, remaining: 2, reset: 200 * ms}, // idle refills to the burst, no more
		{at: 4 * time.Second, ok: true, remaining: 1, reset: 400 * ms}, // a clock going back refills nothing
	})
}

func TestLimiterTokenBucketExact(t *testing.T) {
	// 3 per second: a token every 333.33…ms, kept exactly (GCRA's interval is truncated
	// to 333333333ns).
	l := mustLimiter(t, Config{Requests: 3, Period: time.Second, Burst: 1, Algorithm: TokenBucket})
	runSteps(t, l, []step{
		{at: 0, ok: true, remaining: 0, reset: 333333334},
		{at: 0, ok: false, wait: 333333334, remaining: 0, reset: 333333334},
		{at: 333333333, ok: false, wait: 1, remaining: 0, reset: 1},
		{at: 333333334, ok: true, remaining: 0, reset: 333333334}, // full at most: the 2 units over it are lost
	})
}

// TestLimiterTokenBucketMatchesGCRA holds the two bookkeepings of one limit to the same
// decisions and reports over a schedule of bursts and gaps, where GCRA's interval is exact.
func TestLimiterTokenBucketMatchesGCRA(t *testing.T) {
	cfg := Config{Requests: 8, Period: time.Second, Burst: 5} // 125ms a token
	g := mustLimiter(t, cfg)
	cfg.Algorithm = TokenBucket
	b := mustLimiter(t, cfg)
	at := time.Duration(0)
	for i := range 400 {
		at += time.Duration(i*37%160) * ms // gaps of 0–159ms, bursts where they are short
		now := t0.Add(at)
		gok, gwait := g.take(now)
		bok, bwait := b.take(now)
		if gok != bok || gwait != bwait {
			t.Fatalf("request %d at t0+%v: GCRA %v, %v; TokenBucket %v, %v", i, at, gok, gwait, bok, bwait)
		}
		grem, greset := g.state(now)
		brem, breset := b.state(now)
		if grem != brem || greset != breset {
			t.Fatalf("state %d at t0+%v: GCRA %d, %v; TokenBucket %d, %v", i, at, grem, greset, brem, breset)
		}
	}
}

func TestLimiterSlidingLog(t *testing.T) {
	l := mustLimiter(t, Config{Requests: 3, Period: time.Second, Algorithm: SlidingLog})
	runSteps(t, l, []step{
		{at: 0, ok: true, remaining: 2, reset: time.Second}, // the reset: until the oldest leaves the log
		{at: 400 * ms, ok: true, remaining: 1, reset: 600 * ms},
		{at: 400 * ms, ok: true, remaining: 0, reset: 600 * ms},
		{at: 500 * ms, ok: false, wait: 500 * ms, remaining: 0, reset: 500 * ms},
		{at: 999 * ms, ok: false, wait: ms, remaining: 0, reset: ms},
		{at: 1000 * ms, ok: true, remaining: 0, reset: 400 * ms}, // the one at 0 left: the log is 400, 400, 1000
		{at: 1300 * ms, ok: false, wait: 100 * ms, remaining: 0, reset: 100 * ms},
		{at: 1400 * ms, ok: true, remaining: 1, reset: 600 * ms}, // both at 400 left
		{at: 5 * time.Second, ok: true, remaining: 2, reset: time.Second},
	})
}

// TestLimiterSlidingLogMatchesCount holds SlidingLog to its definition: a request is
// admitted iff fewer than Requests were admitted in the Period before it.
func TestLimiterSlidingLogMatchesCount(t *testing.T) {
	const limit, period = 4, time.Second
	l := mustLimiter(t, Config{Requests: limit, Period: period, Algorithm: SlidingLog})
	var admitted []time.Time
	at := time.Duration(0)
	for i := range 400 {
		at += time.Duration(i*53%190) * ms
		now := t0.Add(at)
		in := 0
		for _, a := range admitted {
			if now.Sub(a) < period {
				in++
			}
		}
		ok, wait := l.take(now)
		if ok != (in < limit) {
			t.Fatalf("request %d at t0+%v: take = %v with %d admitted in the last %v", i, at, ok, in, period)
		}
		if ok {
			admitted = append(admitted, now)
			continue
		}
		if oldest := admitted[len(admitted)-in]; wait != oldest.Add(period).Sub(now) {
			t.Fatalf("request %d at t0+%v: wait %v, want until t0+%v", i, at, wait, oldest.Add(period).Sub(t0))
		}
	}
}

func TestLimiterFirstRequestWindow(t *testing.T) {
	l := mustLimiter(t, Config{Requests: 2, Period: time.Second, Algorithm: FirstRequestWindow})
	if rem, reset := l.state(t0); rem != 2 || reset != 0 {
		t.Fatalf("state before any request = %d, %v; want 2, 0 (no window open)", rem, reset)
	}
	runSteps(t, l, []step{
		{at: 300 * ms, ok: true, remaining: 1, reset: time.Second}, // opens the window [300ms, 1300ms)
		{at: 800 * ms, ok: true, remaining: 0, reset: 500 * ms},
		{at: 1000 * ms, ok: false, wait: 300 * ms, remaining: 0, reset: 300 * ms}, // no turn on the clock's second
		{at: 1299 * ms, ok: false, wait: ms, remaining: 0, reset: ms},
		{at: 1300 * ms, ok: true, remaining: 1, reset: time.Second}, // the next window opens here
		{at: 5100 * ms, ok: true, remaining: 1, reset: time.Second}, // idle: the next request opens one
		{at: 5000 * ms, ok: true, remaining: 0, reset: 1100 * ms},   // a clock going back stays in the window
	})
	if rem, reset := l.state(t0.Add(6100 * ms)); rem != 2 || reset != 0 {
		t.Fatalf("state after the window ended = %d, %v; want 2, 0", rem, reset)
	}
}

func TestLimiterExported(t *testing.T) {
	l, err := NewLimiter(Config{Requests: 2, Period: time.Second, Algorithm: FirstRequestWindow})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if ok, _ := l.Take(t0.Add(500 * ms)); ok != want {
			t.Fatalf("Take %d = %v, want %v", i, ok, want)
		}
	}
	if rem, reset := l.State(t0.Add(700 * ms)); rem != 0 || reset != 800*ms {
		t.Fatalf("State = %d, %v; want 0, 800ms", rem, reset)
	}
	if _, err := NewLimiter(Config{Requests: 2, Period: time.Second, Burst: 1, Algorithm: SlidingLog}); err == nil {
		t.Fatal("NewLimiter accepted a Burst for SlidingLog")
	}
}

func TestRounding(t *testing.T) {
	for _, tt := range []struct {
		d                 time.Duration
		up, down, nearest time.Duration
	}{
		{0, 0, 0, 0},
		{-time.Second, 0, 0, 0},
		{time.Second, time.Second, time.Second, time.Second},
		{1400 * ms, 2 * time.Second, time.Second, time.Second},
		{1500 * ms, 2 * time.Second, time.Second, 2 * time.Second},
		{1600 * ms, 2 * time.Second, time.Second, 2 * time.Second},
		{1, time.Second, 0, 0},
	} {
		for _, r := range []struct {
			round HeaderStyle
			want  time.Duration
		}{{0, tt.up}, {ResetRoundedDown, tt.down}, {ResetRoundedNearest, tt.nearest}} {
			if got := roundDuration(tt.d, time.Second, r.round); got != r.want {
				t.Errorf("roundDuration(%v, 1s, %v) = %v, want %v", tt.d, r.round, got, r.want)
			}
			at := t0.Add(tt.d)
			if tt.d < 0 {
				continue
			}
			if got := roundInstant(at, time.Second, r.round); !got.Equal(t0.Add(r.want)) {
				t.Errorf("roundInstant(t0+%v, 1s, %v) = t0+%v, want t0+%v", tt.d, r.round, got.Sub(t0), r.want)
			}
		}
	}
	at := t0.Add(333333333) // to the millisecond
	for _, r := range []struct {
		round HeaderStyle
		want  time.Duration
	}{{0, 334 * ms}, {ResetRoundedDown, 333 * ms}, {ResetRoundedNearest, 333 * ms}} {
		if got := roundInstant(at, ms, r.round); !got.Equal(t0.Add(r.want)) {
			t.Errorf("roundInstant(t0+333.333333ms, 1ms, %v) = t0+%v, want t0+%v", r.round, got.Sub(t0), r.want)
		}
	}
}

func TestLimiterClear(t *testing.T) {
	for _, alg := range []Algorithm{GCRA, FixedWindow, SlidingWindow, TokenBucket, SlidingLog, FirstRequestWindow} {
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
