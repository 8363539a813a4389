package quotatest

import (
	"net/http"
	"strconv"
	"time"
)

// Header names, as the styles spell them. net/http canonicalises them on the wire
// ("Ratelimit-Policy", "X-Ratelimit-Reset", "Retry-After-Ms"); header names are
// case-insensitive.
const (
	hdrRetryAfter     = "Retry-After"
	hdrRetryAfterMs   = "Retry-After-Ms"
	hdrRateLimit      = "RateLimit"
	hdrRateLimitPol   = "RateLimit-Policy"
	hdrXLimit         = "X-RateLimit-Limit"
	hdrXRemaining     = "X-RateLimit-Remaining"
	hdrXReset         = "X-RateLimit-Reset"
	ietfPolicyName    = `"default"`
	quotaHeaderStyles = IETF | xResetStyles
)

// report is what one response tells the client about the limit.
type report struct {
	now       time.Time     // the instant of the decision
	limit     int           // the most requests admitted back to back
	window    time.Duration // how long the whole limit takes to return from empty
	remaining int           // what could go back to back now
	reset     time.Duration // until the quota is whole again (admitted) or until admission (refused)
	retry     time.Duration // > 0 on rate and pause refusals: until a request would be admitted

	tokens       bool // token mode: the token fields are set
	tokLimit     int
	tokRemaining int
	tokReset     time.Duration
}

// writeHeaders sets the headers of style s that describe r.
func writeHeaders(h http.Header, s HeaderStyle, r report) {
	if r.retry > 0 {
		switch {
		case s&RetryAfterSeconds != 0:
			h.Set(hdrRetryAfter, strconv.FormatInt(ceilDiv(r.retry, time.Second), 10))
		case s&RetryAfterDate != 0:
			h.Set(hdrRetryAfter, roundInstant(r.now.Add(r.retry), time.Second, 0).Format(http.TimeFormat))
		}
		if s&RetryAfterMillis != 0 {
			h.Set(hdrRetryAfterMs, strconv.FormatInt(ceilDiv(r.retry, time.Millisecond), 10))
		}
	}
	if s&quotaHeaderStyles == 0 {
		return
	}
	if r.tokens && s&xResetStyles != 0 {
		writeTokenHeaders(h, r)
	}
	remaining := strconv.Itoa(r.remaining)
	round := s & roundingStyle
	resetDelta := strconv.FormatInt(int64(roundDuration(r.reset, time.Second, round)/time.Second), 10)
	if s&IETF != 0 {
		h.Set(hdrRateLimitPol, ietfPolicyName+
			";q="+strconv.Itoa(r.limit)+
			";w="+strconv.FormatInt(max(1, ceilDiv(r.window, time.Second)), 10))
		h.Set(hdrRateLimit, ietfPolicyName+
			";r="+remaining+
			";t="+resetDelta)
	}
	if s&xResetStyles != 0 {
		h.Set(hdrXLimit, strconv.Itoa(r.limit))
		h.Set(hdrXRemaining, remaining)
		at := r.now.Add(max(0, r.reset))
		var reset string
		switch {
		case s&XRateLimitEpoch != 0:
			reset = strconv.FormatInt(roundInstant(at, time.Second, round).Unix(), 10)
		case s&XRateLimitEpochMillis != 0:
			reset = strconv.FormatInt(roundInstant(at, time.Millisecond, round).UnixMilli(), 10)
		case s&XRateLimitDate != 0:
			reset = roundInstant(at, time.Second, round).Format(http.TimeFormat)
		default:
			reset = resetDelta
		}
		h.Set(hdrXReset, reset)
	}
}

// roundDuration rounds d (0 when negative) to a multiple of unit as round says: up when
// it is 0, down for ResetRoundedDown, to the nearest (a half up) for ResetRoundedNearest.
func roundDuration(d, unit time.Duration, round HeaderStyle) time.Duration {
	d = max(0, d)
	switch round {
	case ResetRoundedDown:
		return d / unit * unit
	case ResetRoundedNearest:
		return (d + unit/2) / unit * unit
	}
	return time.Duration(ceilDiv(d, unit)) * unit
}

// roundInstant rounds t to a multiple of unit, as roundDuration rounds, in UTC. Whole
// seconds and milliseconds since the zero time (time.Time.Truncate's origin) are whole
// since the Unix epoch too.
func roundInstant(t time.Time, unit time.Duration, round HeaderStyle) time.Time {
	down := t.Truncate(unit)
	switch {
	case round == ResetRoundedDown:
	case round == ResetRoundedNearest && t.Sub(down) < unit/2:
	case down.Equal(t):
	default:
		down = down.Add(unit)
	}
	return down.UTC()
}

// ceilDiv returns d/unit rounded up, and 0 for d <= 0.
func ceilDiv(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d-1)/unit) + 1
}
