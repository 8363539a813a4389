package ratelimit

import (
	"math"
	"testing"
	"time"
)

// fbRFCNow is the instant the RFC 9110 example date is read at: 37 s before
// "Sun, 06 Nov 1994 08:49:37 GMT".
var fbRFCNow = time.Date(1994, time.November, 6, 8, 49, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"seconds", "120", 120 * time.Second, true},
		{"zero", "0", 0, true},
		{"decimal", "1.5", 1500 * time.Millisecond, true},
		{"decimal-without-integer", ".25", 250 * time.Millisecond, true},
		{"ows", " \t7 ", 7 * time.Second, true},
		{"imf-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"rfc850", "Sunday, 06-Nov-94 08:49:37 GMT", 37 * time.Second, true},
		{"asctime", "Sun Nov  6 08:49:37 1994", 37 * time.Second, true},
		{"asctime-two-digit-day", "Sun Nov 16 08:49:37 1994", 10*24*time.Hour + 37*time.Second, true},
		{"utc-zone", "Sun, 06 Nov 1994 08:49:37 UTC", 37 * time.Second, true},
		{"ut-zone", "Sun, 06 Nov 1994 08:49:37 UT", 37 * time.Second, true},
		{"numeric-zone", "Sun, 06 Nov 1994 09:49:37 +0100", 37 * time.Second, true},
		{"numeric-zone-colon", "Sun, 06 Nov 1994 03:49:37 -05:00", 37 * time.Second, true},
		{"missing-zone", "Sun, 06 Nov 1994 08:49:37", 37 * time.Second, true},
		{"fractional-seconds", "Sun, 06 Nov 1994 08:49:37.250 GMT", 37250 * time.Millisecond, true},
		{"single-digit-day", "Sun, 6 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"asctime-single-space-day", "Sun Nov 6 08:49:37 1994", 37 * time.Second, true},
		{"lower-case", "sun, 06 nov 1994 08:49:37 gmt", 37 * time.Second, true},
		{"no-weekday", "06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"full-names", "Sunday, 06 November 1994 08:49:37 GMT", 37 * time.Second, true},
		{"weekday-not-checked", "Mon, 06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"past-date", "Sun, 06 Nov 1994 08:00:00 GMT", 0, true},
		{"past-rfc850", "Saturday, 05-Nov-94 08:49:37 GMT", 0, true},
		{"huge", "99999999999999999999999999", math.MaxInt64, true},
		{"far-future-date", "Fri, 31 Dec 9999 23:59:59 GMT", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Sub(fbRFCNow), true},
		{"negative", "-5", 0, false},
		{"plus-sign", "+5", 0, false},
		{"exponent", "1e3", 0, false},
		{"nan", "NaN", 0, false},
		{"inf", "Inf", 0, false},
		{"hex", "0x10", 0, false},
		{"garbage", "soon", 0, false},
		{"empty", "", 0, false},
		{"only-dot", ".", 0, false},
		{"two-dots", "1.2.3", 0, false},
		{"inner-space", "1 2", 0, false},
		{"bad-day", "Sun, 31 Feb 1994 08:49:37 GMT", 0, false},
		{"day-zero", "Sun, 00 Nov 1994 08:49:37 GMT", 0, false},
		{"bad-hour", "Sun, 06 Nov 1994 24:49:37 GMT", 0, false},
		{"bad-minute", "Sun, 06 Nov 1994 08:60:37 GMT", 0, false},
		{"bad-month", "Sun, 06 Nox 1994 08:49:37 GMT", 0, false},
		{"bad-weekday", "Sxn, 06 Nov 1994 08:49:37 GMT", 0, false},
		{"named-zone", "Sun, 06 Nov 1994 08:49:37 EST", 0, false},
		{"bad-offset", "Sun, 06 Nov 1994 08:49:37 +2500", 0, false},
		{"trailing-junk", "Sun, 06 Nov 1994 08:49:37 GMT junk", 0, false},
		{"three-digit-year", "Sun, 06 Nov 994 08:49:37 GMT", 0, false},
		{"five-digit-year", "Sun, 06 Nov 19945 08:49:37 GMT", 0, false},
		{"missing-seconds", "Sun, 06 Nov 1994 08:49 GMT", 0, false},
		{"empty-fraction", "Sun, 06 Nov 1994 08:49:37. GMT", 0, false},
		{"mixed-separators", "Sun, 06-Nov 1994 08:49:37 GMT", 0, false},
		{"asctime-missing-year", "Sun Nov  6 08:49:37", 0, false},
		{"asctime-two-digit-year", "Sun Nov  6 08:49:37 94", 0, false},
		{"rfc3339-is-not-an-http-date", "1994-11-06T08:49:37Z", 0, false},
		{"weekday-only", "Sunday", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.value, fbRFCNow)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseRetryAfter(%q, fbRFCNow) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseRetryAfterMs(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"integer", "1500", 1500 * time.Millisecond, true},
		{"zero", "0", 0, true},
		{"decimal", "20.5", 20500 * time.Microsecond, true},
		{"sub-nanosecond-fraction", "0.0000001", 0, true},
		{"ows", " 30 ", 30 * time.Millisecond, true},
		{"huge", "99999999999999999999", math.MaxInt64, true},
		{"negative", "-1", 0, false},
		{"nan", "NaN", 0, false},
		{"inf", "+Inf", 0, false},
		{"exponent", "1e3", 0, false},
		{"unit", "30ms", 0, false},
		{"garbage", "later", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfterMs(tt.value)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseRetryAfterMs(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestParseRetryAfterStatuses checks that level 1 applies on every error
// status, 4xx and 5xx: a wait the server asked for, whatever the status (a
// 418 ban, a 529 overload), and makes the response a refusal; never on a
// success or a redirect, whose Retry-After is no quota's.
func TestParseRetryAfterStatuses(t *testing.T) {
	h := fbHeader("Retry-After", "Sun, 01 Jun 2025 12:00:09 GMT")
	for status, want := range map[int]time.Duration{
		429: 9 * time.Second, 503: 9 * time.Second, 403: 9 * time.Second,
		400: 9 * time.Second, 404: 9 * time.Second, 418: 9 * time.Second,
		500: 9 * time.Second, 502: 9 * time.Second, 529: 9 * time.Second, 599: 9 * time.Second,
		200: 0, 204: 0, 301: 0, 399: 0, 600: 0,
	} {
		fb := Parse(status, h, fbT0)
		if fb.Pause != want || fb.Exhausted != (want > 0) {
			t.Errorf("Parse(%d, Retry-After: date 9s ahead, fbT0) = pause %v, exhausted %v; want %v, %v",
				status, fb.Pause, fb.Exhausted, want, want > 0)
		}
	}
}
