package quotatest_test

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// at returns t0 plus each offset, in milliseconds.
func at(offsets ...int) []time.Time {
	ts := make([]time.Time, len(offsets))
	for i, o := range offsets {
		ts[i] = t0.Add(time.Duration(o) * time.Millisecond)
	}
	return ts
}

// paced returns a GCRA schedule: burst at t0, then n more one interval apart.
func paced(burst, n int, interval time.Duration) []time.Time {
	var ts []time.Time
	for range burst {
		ts = append(ts, t0)
	}
	for i := 1; i <= n; i++ {
		ts = append(ts, t0.Add(time.Duration(i)*interval))
	}
	return ts
}

func TestCheckTimes(t *testing.T) {
	const T = 200 * time.Millisecond
	early := paced(5, 10, T)
	early[9] = early[9].Add(-time.Nanosecond) // the 5th paced arrival, 1ns early
	tests := []struct {
		name     string
		times    []time.Time
		burst    int
		slack    time.Duration
		from, to int // offsets in ms of the window reported; -1: no error
		count    int
		allowed  int
	}{
		{"empty", nil, 1, 0, -1, -1, 0, 0},
		{"one", at(0), 1, 0, -1, -1, 0, 0},
		{"exactly the burst", at(0, 0, 0, 0, 0), 5, 0, -1, -1, 0, 0},
		{"one over the burst", at(0, 0, 0, 0, 0, 0), 5, 0, 0, 0, 6, 5},
		{"paced", paced(5, 20, T), 5, 0, -1, -1, 0, 0},
		{"paced, unsorted", reversed(paced(5, 20, T)), 5, 0, -1, -1, 0, 0},
		{"one early", early, 5, 0, 0, 999, 10, 9}, // To is t0+999.999999ms
		{"one early within slack", early, 5, time.Nanosecond, -1, -1, 0, 0},
		{"burst of 1, back to back", at(0, 200, 400, 450), 1, 0, 400, 450, 2, 1},
		{"a later window", at(0, 10000, 10001, 10002), 2, 0, 10000, 10002, 3, 2},
		{"ties at the window's end", at(0, 150, 150, 150), 2, 0, 0, 150, 4, 2},
		{"unsorted burst", at(300, 0, 100, 300, 300), 2, 0, 0, 300, 5, 3},
		{"slack widens every window", at(0, 0, 190, 390), 2, 15 * time.Millisecond, -1, -1, 0, 0},
		{"slack is not enough", at(0, 0, 190, 390), 2, 5 * time.Millisecond, 0, 190, 3, 2},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.times)
		err := quotatest.CheckTimes(tt.times, tt.burst, T, tt.slack)
		if !slices.Equal(in, tt.times) {
			t.Errorf("%s: CheckTimes modified its argument", tt.name)
		}
		if tt.from < 0 {
			if err != nil {
				t.Errorf("%s: CheckTimes(burst %d, %v, slack %v) = %v, want nil", tt.name, tt.burst, T, tt.slack, err)
			}
			continue
		}
		var pe *quotatest.PacingError
		if !errors.As(err, &pe) {
			t.Errorf("%s: CheckTimes(burst %d, %v, slack %v) = %v, want a *PacingError", tt.name, tt.burst, T, tt.slack, err)
			continue
		}
		from, to := pe.From.Sub(t0).Milliseconds(), pe.To.Sub(t0).Milliseconds()
		if from != int64(tt.from) || to != int64(tt.to) || pe.Count != tt.count || pe.Allowed != tt.allowed {
			t.Errorf("%s: window t0+%dms..t0+%dms holding %d of %d allowed, want t0+%dms..t0+%dms holding %d of %d (%v)",
				tt.name, from, to, pe.Count, pe.Allowed, tt.from, tt.to, tt.count, tt.allowed, err)
		}
	}
	for _, bad := range []struct {
		burst           int
		interval, slack time.Duration
	}{{0, T, 0}, {1, 0, 0}, {1, T, -1}} {
		err := quotatest.CheckTimes(nil, bad.burst, bad.interval, bad.slack)
		var pe *quotatest.PacingError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("CheckTimes(nil, %d, %v, %v) = %v, want an argument error", bad.burst, bad.interval, bad.slack, err)
		}
	}
}

func reversed(ts []time.Time) []time.Time {
	ts = slices.Clone(ts)
	slices.Reverse(ts)
	return ts
}

// bruteForce checks every pair of sorted arrivals: the definition CheckTimes must match.
func bruteForce(ts []time.Time, burst int, interval, slack time.Duration) bool {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	for i := range ts {
		for j := i; j < len(ts); j++ {
			count := 0
			for _, x := range ts {
				if !x.Before(ts[i]) && !x.After(ts[j]) {
					count++
				}
			}
			if count > burst+int((ts[j].Sub(ts[i])+slack)/interval) {
				return false
			}
		}
	}
	return true
}

func TestCheckTimesMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const T = 100 * time.Millisecond
	violations := 0
	for run := range 2000 {
		burst := 1 + rng.IntN(4)
		slack := time.Duration(rng.IntN(3)) * 10 * time.Millisecond
		n := rng.IntN(25)
		ts := make([]time.Time, n)
		now := t0
		for i := range ts {
			if rng.IntN(3) > 0 { // mostly near the pace, sometimes together
				now = now.Add(time.Duration(rng.IntN(int(2*T/time.Millisecond))) * time.Millisecond)
			}
			ts[i] = now
		}
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		want := bruteForce(ts, burst, T, slack)
		err := quotatest.CheckTimes(ts, burst, T, slack)
		if (err == nil) != want {
			t.Fatalf("run %d: CheckTimes(%v, %d, %v, %v) = %v, brute force says ok=%v", run, ts, burst, T, slack, err, want)
		}
		var pe *quotatest.PacingError
		if errors.As(err, &pe) {
			violations++
			in := 0
			for _, x := range ts {
				if !x.Before(pe.From) && !x.After(pe.To) {
					in++
				}
			}
			if in != pe.Count || pe.Count <= pe.Allowed ||
				pe.Allowed != burst+int((pe.To.Sub(pe.From)+slack)/T) {
				t.Fatalf("run %d: reported window %+v does not hold what it says (%d arrivals in it)", run, pe, in)
			}
		}
	}
	if violations < 200 || violations > 1800 {
		t.Errorf("%d of 2000 random schedules broke the bound: the generator tests too little of one side", violations)
	}
}

func TestCheckPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A generous provider, so that the client alone decides the pacing.
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1000, Period: time.Second})
		c := p.Client()
		for range 3 {
			fetch(t, c, http.MethodGet, api)
		}
		for range 5 {
			time.Sleep(100 * time.Millisecond)
			fetch(t, c, http.MethodGet, api)
		}
		if err := p.CheckPacing(3, 100*time.Millisecond, 0); err != nil {
			t.Errorf("paced arrivals: CheckPacing = %v", err)
		}
		fetch(t, c, http.MethodGet, api) // one more at the same instant
		err := p.CheckPacing(3, 100*time.Millisecond, 0)
		var pe *quotatest.PacingError
		if !errors.As(err, &pe) || pe.Count != 9 || pe.Allowed != 8 {
			t.Errorf("one more: CheckPacing = %v, want 9 arrivals where 8 are allowed", err)
		}
	})
}
