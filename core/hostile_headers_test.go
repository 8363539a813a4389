package core_test

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The hostile server's answers (hostile_test.go): rate-limit headers of
// every family, drawn with values from junk to out of range.

// draws is where the responses' choices come from: a seeded *rand.Rand,
// or fuzzed bytes (byteDraws).
type draws interface {
	IntN(n int) int
	Int64N(n int64) int64
}

// cleanResponse is a 200 that says nothing alarming: no rate-limit headers,
// or room left.
func cleanResponse(r draws) (int, http.Header) {
	h := http.Header{}
	switch r.IntN(3) {
	case 1:
		h.Set("X-RateLimit-Limit", "10000")
		h.Set("X-RateLimit-Remaining", strconv.Itoa(1000+r.IntN(9000)))
		h.Set("X-RateLimit-Reset", strconv.Itoa(1+r.IntN(60)))
	case 2:
		h.Set("RateLimit-Policy", `"default";q=10000;w=60`)
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, 1000+r.IntN(9000), 1+r.IntN(60)))
	}
	return http.StatusOK, h
}

// hostileResponse draws a status (200, 429, 503 or 403) and rate-limit
// headers from every family, each with values from junk to out of range.
func hostileResponse(r draws, now time.Time) (int, http.Header) {
	h := http.Header{}
	status := [...]int{200, 429, 503, 403}[r.IntN(4)]
	if r.IntN(2) == 0 {
		h.Set("Retry-After", retryAfterValue(r, now))
	}
	if r.IntN(6) == 0 {
		h.Set("Retry-After-Ms", oneOf(r, "0", "1", "250", "1500", "2500", "-40", "3600000", "1e9", "99999999999999999999", "ms", "1.5"))
	}
	if r.IntN(2) == 0 {
		h.Set("X-RateLimit-Remaining", oneOf(r, "0", "0", "0", "1", "19", "199", "-1", "9999999999999999999", "none", "0.5", ""))
		if r.IntN(3) > 0 {
			h.Set("X-RateLimit-Limit", oneOf(r, "0", "1", "20", "200", "5000", "-5", "many", "18446744073709551616"))
		}
		if r.IntN(4) > 0 {
			h.Set("X-RateLimit-Reset", resetValue(r, now))
		}
		if r.IntN(5) == 0 {
			h.Set("X-RateLimit-Reset-After", oneOf(r, "0", "0.004", "1.25", "2", "3", "30", "3600", "-1", "1e12", "later"))
		}
		if r.IntN(6) == 0 {
			h.Set("X-RateLimit-Used", oneOf(r, "0", "20", "5000", "-1", "x"))
		}
	}
	if r.IntN(3) == 0 {
		q := oneOf(r, "0", "-1", "1", "20", "200", "1000000000000000", "1.5", "q")
		w := oneOf(r, "0", "-1", "1", "2", "60", "86400", "1000000000000", "w")
		rem := oneOf(r, "0", "0", "1", "19", "-3", "1000000000000000", "r")
		tt := oneOf(r, "0", "1", "2", "3", "5", "30", "3600", "-1", "1000000000000", "t")
		switch r.IntN(4) {
		case 0: // a malformed list
			h.Set("RateLimit-Policy", `"p";q=`+q+";w=")
			h.Set("RateLimit", `"p";r=`+rem+`;t=`+tt+`, (`)
		default:
			h.Set("RateLimit-Policy", `"p";q=`+q+";w="+w)
			h.Set("RateLimit", `"p";r=`+rem+";t="+tt)
		}
	}
	if r.IntN(6) == 0 { // the older draft's three fields
		h.Set("RateLimit-Limit", oneOf(r, "0", "20", "200;w=1", "-1", "x"))
		h.Set("RateLimit-Remaining", oneOf(r, "0", "1", "-1", "x"))
		h.Set("RateLimit-Reset", resetValue(r, now))
	}
	if r.IntN(8) == 0 { // the per-unit family
		h.Set("X-RateLimit-Remaining-Requests", oneOf(r, "0", "1", "-1", "x"))
		h.Set("X-RateLimit-Reset-Requests", oneOf(r, "1s", "6m0s", "1h2m3.5s", "-1s", "20ms", "forever", "3"))
	}
	return status, h
}

// retryAfterValue draws a Retry-After: junk, negative, small, up to an hour
// and far beyond, fractional, and HTTP dates past, near, far and broken.
func retryAfterValue(r draws, now time.Time) string {
	switch r.IntN(8) {
	case 0:
		return oneOf(r, "", "soon", "NaN", "Infinity", "0x10", "5s", " 5", "1e3", "--1", "+3", "1,2")
	case 1:
		return oneOf(r, "-1", "-3600", "-0", "-9223372036854775808")
	case 2:
		return strconv.Itoa(r.IntN(4)) // 0 to 3 s
	case 3:
		return oneOf(r, "5", "30", "120", "3600", "3601", "86400")
	case 4:
		return oneOf(r, "9223372036854775807", "99999999999999999999", "18446744073709551615", "1.5", "0.001")
	case 5:
		d := time.Duration(r.Int64N(int64(10*time.Second))) - 3*time.Second
		return now.Add(d).UTC().Format(http.TimeFormat) // a few seconds either way
	case 6:
		return oneOf(r, now.Add(-time.Hour).UTC().Format(http.TimeFormat),
			now.Add(time.Hour).UTC().Format(http.TimeFormat),
			now.AddDate(5, 0, 0).UTC().Format(http.TimeFormat),
			now.Add(90*time.Second).UTC().Format(time.RFC850),
			now.Add(4*time.Second).UTC().Format(time.ANSIC))
	}
	return oneOf(r, "Mon, 32 Foo 2000 25:61:61 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "yesterday")
}

// resetValue draws a quota reset: a delta, epoch seconds, epoch
// milliseconds, past or future, negative, fractional or junk.
func resetValue(r draws, now time.Time) string {
	d := time.Duration(r.Int64N(int64(2*time.Hour))) - 10*time.Minute
	switch r.IntN(7) {
	case 0:
		return strconv.Itoa(r.IntN(4)) // 0 to 3 s
	case 1:
		return oneOf(r, "5", "30", "60", "3600", "86400")
	case 2:
		return strconv.FormatInt(now.Add(d).Unix(), 10)
	case 3:
		return strconv.FormatInt(now.Add(d).UnixMilli(), 10)
	case 4:
		return oneOf(r, "1700000000", "1700000000000", "4102444800", "99999999999999", "9223372036854775807")
	case 5:
		return oneOf(r, "-1", "-1700000000", "1.5", "0.25", "2.75")
	}
	return oneOf(r, "", "never", "1e9", "0x1", "3s")
}

func oneOf(r draws, vs ...string) string { return vs[r.IntN(len(vs))] }
