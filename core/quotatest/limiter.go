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
	capacity int           // the most requests admitted back to back: Burst (GCRA, TokenBucket) or Requests (windows)
	interval time.Duration // GCRA emission interval, Period/Requests
	tau      time.Duration // GCRA tolerance, (capacity-1)*interval
	period   time.Duration // the window length; TokenBucket: the time Requests tokens take to return
	requests int64         // TokenBucket: tokens returned per Period

	// GCRA state: the theoretical arrival time. Zero means idle (a full bucket).
	tat time.Time

	// FixedWindow, SlidingWindow and FirstRequestWindow state: the window that holds the
	// last instant seen (zero: none yet), what it admitted, and (SlidingWindow) what the
	// window before it admitted.
	windowStart time.Time
	used        int
	prev        int

	// TokenBucket state: the bucket's level at filled, in units of 1/Period of a token
	// (a token is Period units; the bucket refills requests units per nanosecond). A zero
	// filled means idle: a full bucket.
	level  int64
	filled time.Time

	// SlidingLog state: the instants of the admitted requests still in the log, oldest
	// first, in a ring of capacity entries starting at head.
	log  []time.Time
	head int
	n    int
}

func newLimiter(cfg Config) limiter {
	l := limiter{alg: cfg.Algorithm, period: cfg.Period}
	switch cfg.Algorithm {
	case GCRA:
		l.capacity = cfg.Burst
		l.interval = cfg.Period / time.Duration(cfg.Requests)
		l.tau = time.Duration(cfg.Burst-1) * l.interval
	case TokenBucket:
		l.capacity = cfg.Burst
		l.requests = int64(cfg.Requests)
	default: // the windowed algorithms
		l.capacity = cfg.Requests
	}
	return l
}

// take admits one request at now, spending quota, or refuses it without spending any and
// reports how long until a request would be admitted (always > 0 on a refusal).
func (l *limiter) take(now time.Time) (ok bool, wait time.Duration) {
	switch l.alg {
	case FixedWindow, FirstRequestWindow:
		l.roll(now)
		if l.used >= l.capacity {
			return false, l.windowStart.Add(l.period).Sub(now)
		}
		if l.used == 0 && l.alg == FirstRequestWindow && !l.open(now) {
			l.windowStart = now // the first request after the last window ended opens one
		}
		l.used++
		return true, 0
	case TokenBucket:
		l.refill(now)
		if l.level < int64(l.period) {
			return false, time.Duration(ceilDivInt(int64(l.period)-l.level, l.requests))
		}
		l.level -= int64(l.period)
		return true, 0
	case SlidingLog:
		l.expire(now)
		if l.n >= l.capacity {
			return false, l.log[l.head].Add(l.period).Sub(now)
		}
		if l.log == nil {
			l.log = make([]time.Time, l.capacity)
		}
		l.log[(l.head+l.n)%l.capacity] = now
		l.n++
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
// back at now, and how long until the quota is whole again: for GCRA and TokenBucket until
// the bucket is full, for FixedWindow and FirstRequestWindow until the current window ends
// (FirstRequestWindow: 0 when no window is open). SlidingWindow reports, as httprate does,
// the current window's end, and SlidingLog, as sliding-log servers do, the time until the
// oldest request in the log leaves it (0 for an empty log): their quota returns
// gradually, not at once.
func (l *limiter) state(now time.Time) (remaining int, reset time.Duration) {
	switch l.alg {
	case FixedWindow:
		l.roll(now)
		return l.capacity - l.used, l.windowStart.Add(l.period).Sub(now)
	case FirstRequestWindow:
		l.roll(now)
		if l.used == 0 {
			return l.capacity, 0
		}
		return l.capacity - l.used, l.windowStart.Add(l.period).Sub(now)
	case TokenBucket:
		l.refill(now)
		full := int64(l.capacity) * int64(l.period)
		return int(l.level / int64(l.period)), time.Duration(ceilDivInt(full-l.level, l.requests))
	case SlidingLog:
		l.expire(now)
		if l.n == 0 {
			return l.capacity, 0
		}
		return l.capacity - l.n, l.log[l.head].Add(l.period).Sub(now)
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
	l.level, l.filled = 0, time.Time{}
	l.head, l.n = 0, 0
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
// FirstRequestWindow's window, once ended, admitted nothing of the next: the next
// request opens it (take).
func (l *limiter) roll(now time.Time) {
	if l.alg == FirstRequestWindow {
		if !l.open(now) {
			l.used = 0
		}
		return
	}
	if ws := now.Truncate(l.period); ws.After(l.windowStart) { // a clock going back stays put
		l.prev = 0
		if ws.Sub(l.windowStart) == l.period {
			l.prev = l.used
		}
		l.windowStart = ws
		l.used = 0
	}
}

// open reports whether FirstRequestWindow's window holds now: one was opened, and now is
// before its end (a clock going back stays in it).
func (l *limiter) open(now time.Time) bool {
	return !l.windowStart.IsZero() && now.Before(l.windowStart.Add(l.period))
}

// refill brings TokenBucket's level to now: requests units per nanosecond since filled,
// up to a full bucket. A clock going back refills nothing.
func (l *limiter) refill(now time.Time) {
	full := int64(l.capacity) * int64(l.period)
	if l.filled.IsZero() {
		l.level, l.filled = full, now
		return
	}
	if elapsed := now.Sub(l.filled); elapsed > 0 {
		if need := ceilDivInt(full-l.level, l.requests); int64(elapsed) >= need {
			l.level = full
		} else {
			l.level += int64(elapsed) * l.requests // < full - level: no overflow
		}
		l.filled = now
	}
}

// expire drops from SlidingLog's log the requests that no longer count at now: those
// admitted a Period or more before it.
func (l *limiter) expire(now time.Time) {
	for l.n > 0 && !now.Before(l.log[l.head].Add(l.period)) {
		l.head = (l.head + 1) % l.capacity
		l.n--
	}
}

// ceilDivInt returns ceil(a/b) for b > 0, and 0 for a <= 0.
func ceilDivInt(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
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

// Limiter is the limit a Provider enforces, without the HTTP: Take and State are pure
// functions of the instants they are given, and read no clock. Use it to work out what a
// server would admit and when, e.g. the best makespan any client can reach for a batch
// (send each request the instant Take admits it). The zero Limiter is not usable; build
// one with NewLimiter. A Limiter is not safe for concurrent use.
type Limiter struct{ l limiter }

// NewLimiter returns a Limiter for cfg's Requests, Period, Burst and Algorithm, with
// every one empty (the first requests find a full quota), or an error naming the first
// invalid field of cfg, as New reports it.
func NewLimiter(cfg Config) (*Limiter, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return &Limiter{l: newLimiter(cfg)}, nil
}

// Take admits one request at now and spends its quota, or refuses it, spending nothing,
// and reports how long after now a request would be admitted (always > 0 on a refusal):
// exactly what a Provider decides for a request arriving at now.
func (l *Limiter) Take(now time.Time) (ok bool, wait time.Duration) { return l.l.take(now) }

// State reports, spending nothing, how many requests could be admitted back to back at
// now and the reset a Provider's headers state (before rounding; see Provider).
func (l *Limiter) State(now time.Time) (remaining int, reset time.Duration) {
	return l.l.state(now)
}
