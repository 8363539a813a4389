package quotatest

import (
	"math/bits"
	"time"
)

// limiter enforces a Config's limit. It is a pure function of the instants it is given:
// it never reads a clock, so every decision can be checked at fixed instants.
// It is not safe for concurrent use; Provider guards it with its mutex.
type limiter struct {
	alg      Algorithm
	capacity int           // the most requests admitted back to back: Burst (GCRA) or Requests (windows)
	interval time.Duration // GCRA emission interval, Period/Requests
	tau      time.Duration // GCRA tolerance, (capacity-1)*interval
	period   time.Duration // FixedWindow and SlidingWindow window length

	// GCRA state: the theoretical arrival time. Zero means idle (a full bucket).
	tat time.Time

	// FixedWindow and SlidingWindow state: the aligned window that holds the last
	// instant seen, what it admitted, and (SlidingWindow) what the window before it admitted.
	windowStart time.Time
	used        int
	prev        int
}

func newLimiter(cfg Config) limiter {
	l := limiter{alg: cfg.Algorithm, period: cfg.Period}
	switch cfg.Algorithm {
	case GCRA:
		l.capacity = cfg.Burst
		l.interval = cfg.Period / time.Duration(cfg.Requests)
		l.tau = time.Duration(cfg.Burst-1) * l.interval
	case FixedWindow, SlidingWindow:
		l.capacity = cfg.Requests
	}
	return l
}

// take admits one request at now, spending quota, or refuses it without spending any and
// reports how long until a request would be admitted (always > 0 on a refusal).
func (l *limiter) take(now time.Time) (ok bool, wait time.Duration) {
	switch l.alg {
	case FixedWindow:
		l.roll(now)
		if l.used >= l.capacity {
			return false, l.windowStart.Add(l.period).Sub(now)
		}
		l.used++
		return true, 0
	case SlidingWindow:
		l.roll(now)
		if l.slidingFits(now, 1) {
			l.used++
			return true, 0
		}
		return false, l.slidingWait(now)
	default: // GCRA
		base := l.base(now)
		if ahead := base.Sub(now); ahead > l.tau {
			return false, ahead - l.tau
		}
		l.tat = base.Add(l.interval)
		return true, 0
	}
}

// state reports, without spending anything, how many requests could be admitted back to
// back at now, and how long until the quota is whole again: for GCRA until the bucket is
// full, for FixedWindow until the current window ends. SlidingWindow reports, as httprate
// does, the current window's end: its quota returns gradually, not at once.
func (l *limiter) state(now time.Time) (remaining int, reset time.Duration) {
	switch l.alg {
	case FixedWindow:
		l.roll(now)
		return l.capacity - l.used, l.windowStart.Add(l.period).Sub(now)
	case SlidingWindow:
		l.roll(now)
		return l.slidingRemaining(now), l.windowStart.Add(l.period).Sub(now)
	default: // GCRA
		ahead := l.base(now).Sub(now)
		if ahead > l.tau {
			return 0, ahead
		}
		return int((l.tau-ahead)/l.interval) + 1, ahead
	}
}

// clear forgets everything spent: the next request finds a full quota.
func (l *limiter) clear() {
	l.tat = time.Time{}
	l.windowStart = time.Time{}
	l.used, l.prev = 0, 0
}

// base is GCRA's max(tat, now).
func (l *limiter) base(now time.Time) time.Time {
	if l.tat.After(now) {
		return l.tat
	}
	return now
}

// roll moves FixedWindow and SlidingWindow to the window that holds now. What the
// window just ended admitted becomes prev; a gap of a whole window or more leaves prev 0.
func (l *limiter) roll(now time.Time) {
	if ws := now.Truncate(l.period); ws.After(l.windowStart) { // a clock going back stays put
		l.prev = 0
		if ws.Sub(l.windowStart) == l.period {
			l.prev = l.used
		}
		l.windowStart = ws
		l.used = 0
	}
}

// The sliding-window counter (go-chi/httprate's and fiber's model) estimates the requests
// of the last Period as prev×(W−e)/W + used, where W is the window length and e how far now
// is into the current window: the previous window's count, weighted by how much of it the
// last Period still overlaps. A request is admitted while the estimate, counting it, stays
// within the limit: prev×(W−e) + (used+n)×W ≤ limit×W. The arithmetic is exact, in 128 bits.

// slidingFits reports whether n more requests fit at now (l rolled to now).
func (l *limiter) slidingFits(now time.Time, n int) bool {
	w, e := uint64(l.period), uint64(now.Sub(l.windowStart))
	hi1, lo1 := bits.Mul64(uint64(l.prev), w-e)
	hi2, lo2 := bits.Mul64(uint64(l.used+n), w)
	lo, carry := bits.Add64(lo1, lo2, 0)
	hi, _ := bits.Add64(hi1, hi2, carry)
	hiL, loL := bits.Mul64(uint64(l.capacity), w)
	return hi < hiL || hi == hiL && lo <= loL
}

// slidingRemaining is how many requests fit back to back at now (l rolled to now).
func (l *limiter) slidingRemaining(now time.Time) int {
	free := l.capacity - l.used
	if free <= 0 || l.prev == 0 {
		return max(0, free)
	}
	// k fit while prev×(W−e) ≤ (free−k)×W: k = free − ceil(prev×(W−e)/W).
	w, e := uint64(l.period), uint64(now.Sub(l.windowStart))
	return max(0, free-int(mulDivCeil(uint64(l.prev), w-e, w)))
}

// slidingWait is how long after now one request fits (l rolled to now, the request refused).
func (l *limiter) slidingWait(now time.Time) time.Duration {
	w := uint64(l.period)
	end := l.windowStart.Add(l.period)
	if l.used+1 > l.capacity {
		// Not in this window. In the next, used becomes prev, and one fits once
		// used×(W−e') ≤ (limit−1)×W: e' ≥ W×(used−limit+1)/used.
		return end.Sub(now) + time.Duration(mulDivCeil(w, uint64(l.used-l.capacity+1), uint64(l.used)))
	}
	// In this window, once prev×(W−e) ≤ (limit−1−used)×W: e ≥ W×(prev−limit+1+used)/prev.
	need := time.Duration(mulDivCeil(w, uint64(l.prev-l.capacity+1+l.used), uint64(l.prev)))
	return l.windowStart.Add(need).Sub(now)
}

// mulDivCeil returns ceil(a×b/c), for c > 0 and a×b/c < 2⁶⁴.
func mulDivCeil(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, r := bits.Div64(hi, lo, c)
	if r != 0 {
		q++
	}
	return q
}
