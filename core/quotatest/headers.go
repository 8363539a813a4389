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
	quotaHeaderStyles = IETF | XRateLimitDelta | XRateLimitEpoch
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
			h.Set(hdrRetryAfter, ceilInstant(r.now.Add(r.retry)).Format(http.TimeFormat))
		}
		if s&RetryAfterMillis != 0 {
			h.Set(hdrRetryAfterMs, strconv.FormatInt(ceilDiv(r.retry, time.Millisecond), 10))
		}
	}
	if s&quotaHeaderStyles == 0 {
		return
	}
	if r.tokens && s&(XRateLimitDelta|XRateLimitEpoch) != 0 {
		writeTokenHeaders(h, r)
	}
	remaining := strconv.Itoa(r.remaining)
	resetSeconds := ceilDiv(r.reset, time.Second)
	resetAt := ceilInstant(r.now.Add(r.reset))
	if s&ResetRoundedDown != 0 {
		resetSeconds = int64(max(0, r.reset) / time.Second)
		resetAt = r.now.Add(r.reset).Truncate(time.Second).UTC()
	}
	if s&IETF != 0 {
		h.Set(hdrRateLimitPol, ietfPolicyName+
			";q="+strconv.Itoa(r.limit)+
			";w="+strconv.FormatInt(max(1, ceilDiv(r.window, time.Second)), 10))
		h.Set(hdrRateLimit, ietfPolicyName+
			";r="+remaining+
			";t="+strconv.FormatInt(resetSeconds, 10))
	}
	if s&(XRateLimitDelta|XRateLimitEpoch) != 0 {
		h.Set(hdrXLimit, strconv.Itoa(r.limit))
		h.Set(hdrXRemaining, remaining)
		if s&XRateLimitEpoch != 0 {
			h.Set(hdrXReset, strconv.FormatInt(resetAt.Unix(), 10))
		} else {
			h.Set(hdrXReset, strconv.FormatInt(resetSeconds, 10))
		}
	}
}

// ceilDiv returns d/unit rounded up, and 0 for d <= 0.
func ceilDiv(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d-1)/unit) + 1
}

// ceilInstant rounds t up to a whole second, in UTC.
func ceilInstant(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s.UTC()
}
