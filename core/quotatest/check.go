package quotatest

import (
	"fmt"
	"slices"
	"time"
)

// PacingError is the window that broke the pacing bound, as CheckTimes reports it.
type PacingError struct {
	From, To time.Time     // the first and last arrival of the window
	Count    int           // arrivals in [From, To]
	Allowed  int           // Burst + floor((To-From+Slack)/Interval)
	Burst    int           // as given to CheckTimes
	Interval time.Duration // as given to CheckTimes
	Slack    time.Duration // as given to CheckTimes
}

// Error names the window, its arrivals and the bound they broke.
func (e *PacingError) Error() string {
	w := e.To.Sub(e.From)
	return fmt.Sprintf("headgate: quotatest: %d arrivals within %v, from %s to %s; at most %d allowed "+
		"(burst %d + floor((%v + %v slack) / %v))",
		e.Count, w, e.From.Format(time.RFC3339Nano), e.To.Format(time.RFC3339Nano),
		e.Allowed, e.Burst, w, e.Slack, e.Interval)
}

// CheckTimes checks that times (in any order) obey GCRA's bound: every window of length W
// holds at most burst + floor((W+slack)/interval) of them. slack absorbs scheduling noise
// in real time; use 0 under testing/synctest. It returns nil, a *PacingError for the first
// window (in time order of its end) that holds too many, or an error for burst < 1,
// interval <= 0 or slack < 0. It runs in O(n log n) time (the sort) and does not modify times.
//
// The check is exact, not sampled: with u(k) = t(k) - k*interval over the sorted times, the
// window from arrival i to arrival j breaks the bound exactly when
// u(i) - u(j) > (burst-1)*interval + slack, so one pass keeping the largest u seen so far
// (in the overflow-free form GCRA uses: the lateness max(0, late + interval - gap)) finds it.
func CheckTimes(times []time.Time, burst int, interval, slack time.Duration) error {
	switch {
	case burst < 1:
		return fmt.Errorf("headgate: quotatest: CheckTimes: burst must be at least 1, got %d", burst)
	case interval <= 0:
		return fmt.Errorf("headgate: quotatest: CheckTimes: interval must be positive, got %v", interval)
	case slack < 0:
		return fmt.Errorf("headgate: quotatest: CheckTimes: slack must not be negative, got %v", slack)
	}
	ts := slices.Clone(times)
	slices.SortStableFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	tolerance := time.Duration(burst-1)*interval + slack
	start := 0             // the window's best first arrival so far: argmax u(i), i < j
	var late time.Duration // u(start) - u(j-1), clamped at 0 when j-1 became the start
	for j := 1; j < len(ts); j++ {
		gap := ts[j].Sub(ts[j-1])
		d := late + interval - gap // u(start) - u(j)
		if d > tolerance {
			end := j
			for end+1 < len(ts) && ts[end+1].Equal(ts[j]) {
				end++ // arrivals at the same instant are in the window too
			}
			w := ts[end].Sub(ts[start])
			return &PacingError{
				From: ts[start], To: ts[end],
				Count:   end - start + 1,
				Allowed: burst + int((w+slack)/interval),
				Burst:   burst, Interval: interval, Slack: slack,
			}
		}
		if d <= 0 {
			start, late = j, 0 // u(j) is the new largest
		} else {
			late = d
		}
	}
	return nil
}
