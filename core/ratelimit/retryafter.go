package ratelimit

import (
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
	"github.com/headgate-go/headgate/core/internal/httpdate"
	"github.com/headgate-go/headgate/core/internal/num"
)

// parseRetryAfterHeaders reads level 1 of Parse: retry-after-ms, then
// x-ms-retry-after-ms, then Retry-After, the first header with a valid value
// winning. ok is false when none of them holds a valid value; present says
// whether any of them was sent at all.
//
// A header sent on several lines (Retry-After is a singleton field, so a
// second line is an error somewhere on the way) gives the longest valid
// wait among them: the conservative reading, where Header.Get would read the
// first line alone.
func parseRetryAfterHeaders(hs *feedbackHeaders, now time.Time) (pause time.Duration, ok, present bool) {
	for _, id := range [...]feedbackHeader{fbHdrRetryAfterMs, fbHdrMsRetryAfterMs, fbHdrRetryAfter} {
		vals := hs.get(id)
		present = present || len(vals) > 0
		for _, v := range vals {
			var d time.Duration
			var valid bool
			if id == fbHdrRetryAfter {
				d, valid = parseRetryAfter(v, now)
			} else {
				d, valid = parseRetryAfterMs(v)
			}
			if valid {
				pause, ok = max(pause, d), true
			}
		}
		if ok {
			return pause, true, true
		}
	}
	return 0, false, present
}

// parseRetryAfterMs reads a retry-after-ms or x-ms-retry-after-ms value: a
// non-negative decimal number of milliseconds. Anything else (a sign, an
// exponent, NaN, Inf, garbage) is invalid.
func parseRetryAfterMs(v string) (time.Duration, bool) {
	return num.ParseDuration(ascii.TrimOWS(v), time.Millisecond)
}

// parseRetryAfter reads a Retry-After value (RFC 9110 section 10.2.3) as seen
// at now: delta-seconds (a non-negative decimal is accepted) or an HTTP-date
// (see httpdate.Parse). A date in the past gives 0, which is valid: the server
// asked for no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = ascii.TrimOWS(v)
	if d, ok := num.ParseDuration(v, time.Second); ok {
		return d, true
	}
	if t, ok := httpdate.Parse(v, now); ok {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
