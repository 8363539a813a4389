package quotatest

import "time"

// limiter enforces a Config's limit. It is a pure function of the instants it is given:
// it never reads a clock, so every decision can be checked at fixed instants.
// It is not safe for concurrent use; Provider guards it with its mutex.
type limiter struct {
	alg      Algorithm
	capacity int           // the most requests admitted back to back: Burst (GCRA) or Requests (FixedWindow)
	interval time.Duration // GCRA emission interval, Period/Requests
	tau      time.Duration // GCRA tolerance, (capacity-1)*interval
	period   time.Duration // FixedWindow window length

	// GCRA state: the theoretical arrival time. Zero means idle (a full bucket).
	tat time.Time

	// FixedWindow state.
	windowStart time.Time
	used        int
}

func newLimiter(cfg Config) limiter {
	l := limiter{alg: cfg.Algorithm, period: cfg.Period}
	switch cfg.Algorithm {
	case GCRA:
		l.capacity = cfg.Burst
		l.interval = cfg.Period / time.Duration(cfg.Requests)
		l.tau = time.Duration(cfg.Burst-1) * l.interval
	case FixedWindow:
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
// full, for FixedWindow until the current window ends.
func (l *limiter) state(now time.Time) (remaining int, reset time.Duration) {
	switch l.alg {
	case FixedWindow:
		l.roll(now)
		return l.capacity - l.used, l.windowStart.Add(l.period).Sub(now)
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
	l.used = 0
}

// base is GCRA's max(tat, now).
func (l *limiter) base(now time.Time) time.Time {
	if l.tat.After(now) {
		return l.tat
	}
	return now
}

// roll moves FixedWindow to the window that holds now.
func (l *limiter) roll(now time.Time) {
	if ws := now.Truncate(l.period); ws.After(l.windowStart) { // a clock going back stays put
		l.windowStart = ws
		l.used = 0
	}
}
