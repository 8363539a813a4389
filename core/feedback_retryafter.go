package core

import (
	"math"
	"time"
)

// parseRetryAfterHeaders reads level 1 of ParseFeedback: retry-after-ms, then
// x-ms-retry-after-ms, then Retry-After, the first header with a valid value
// winning. ok is false when none of them holds a valid value.
func parseRetryAfterHeaders(hs *feedbackHeaders, now time.Time) (pause time.Duration, ok bool) {
	for _, id := range [...]feedbackHeader{fbHdrRetryAfterMs, fbHdrMsRetryAfterMs} {
		for _, v := range hs.get(id) {
			if d, ok := parseRetryAfterMs(v); ok {
				return d, true
			}
		}
	}
	for _, v := range hs.get(fbHdrRetryAfter) {
		if d, ok := parseRetryAfter(v, now); ok {
			return d, true
		}
	}
	return 0, false
}

// parseRetryAfterMs reads a retry-after-ms or x-ms-retry-after-ms value: a
// non-negative decimal number of milliseconds. Anything else (a sign, an
// exponent, NaN, Inf, garbage) is invalid.
func parseRetryAfterMs(v string) (time.Duration, bool) {
	return parseFeedbackDecimalDuration(feedbackTrimOWS(v), time.Millisecond)
}

// parseRetryAfter reads a Retry-After value (RFC 9110 section 10.2.3) as seen
// at now: delta-seconds (a non-negative decimal is accepted) or an HTTP-date
// (see parseHTTPDate). A date in the past gives 0, which is valid: the server
// asked for no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = feedbackTrimOWS(v)
	if d, ok := parseFeedbackDecimalDuration(v, time.Second); ok {
		return d, true
	}
	if t, ok := parseHTTPDate(v, now); ok {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// feedbackTrimOWS trims the optional white space (SP and HTAB) that net/http
// trims already but a header map built by hand may keep.
func feedbackTrimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// feedbackDecimal is a non-negative decimal number read from a header: its
// integer part (saturated at feedbackDecimalMax) and its fraction in nanounits
// (the first nine digits; the rest are dropped).
type feedbackDecimal struct {
	ip   uint64
	frac uint64
}

// feedbackDecimalMax saturates integer parts: larger numbers are all "huge".
const feedbackDecimalMax = 1 << 62

// parseFeedbackDecimal reads DIGIT* ["." DIGIT*] with at least one digit and
// nothing else: no sign, no exponent, no spaces, no "NaN" or "Inf".
func parseFeedbackDecimal(s string) (feedbackDecimal, bool) {
	var d feedbackDecimal
	digits, i := 0, 0
	for ; i < len(s) && feedbackIsDigit(s[i]); i++ {
		d.ip = min(d.ip*10+uint64(s[i]-'0'), feedbackDecimalMax)
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		scale := uint64(1e8)
		for ; i < len(s) && feedbackIsDigit(s[i]); i++ {
			d.frac += uint64(s[i]-'0') * scale
			scale /= 10
			digits++
		}
	}
	return d, digits > 0 && i == len(s)
}

// duration returns d units as a Duration, saturated at math.MaxInt64.
func (d feedbackDecimal) duration(unit time.Duration) time.Duration {
	u := uint64(unit)
	if d.ip > math.MaxInt64/u {
		return math.MaxInt64
	}
	n := d.ip * u
	var f uint64
	if u%1e9 == 0 {
		f = d.frac * (u / 1e9)
	} else {
		f = d.frac * u / 1e9
	}
	if n > math.MaxInt64-f {
		return math.MaxInt64
	}
	return time.Duration(n + f)
}

// parseFeedbackDecimalDuration reads a non-negative decimal number of units.
func parseFeedbackDecimalDuration(s string, unit time.Duration) (time.Duration, bool) {
	d, ok := parseFeedbackDecimal(s)
	if !ok {
		return 0, false
	}
	return d.duration(unit), true
}

func feedbackIsDigit(c byte) bool { return '0' <= c && c <= '9' }

func feedbackIsAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// httpDateScanner walks a date string left to right; every method consumes only
// what it matched.
type httpDateScanner struct {
	s string
	i int
}

func (d *httpDateScanner) done() bool { return d.i >= len(d.s) }

func (d *httpDateScanner) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

// spaces skips SP and HTAB and returns how many it skipped.
func (d *httpDateScanner) spaces() int {
	n := 0
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t') {
		d.i++
		n++
	}
	return n
}

// word consumes a run of ASCII letters.
func (d *httpDateScanner) word() string {
	j := d.i
	for d.i < len(d.s) && feedbackIsAlpha(d.s[d.i]) {
		d.i++
	}
	return d.s[j:d.i]
}

// num consumes minDigits to maxDigits decimal digits and returns their value.
func (d *httpDateScanner) num(minDigits, maxDigits int) (n, digits int, ok bool) {
	for d.i < len(d.s) && feedbackIsDigit(d.s[d.i]) && digits < maxDigits {
		n = n*10 + int(d.s[d.i]-'0')
		d.i++
		digits++
	}
	if d.i < len(d.s) && feedbackIsDigit(d.s[d.i]) {
		return 0, 0, false // too many digits
	}
	return n, digits, digits >= minDigits
}

// twoDigits consumes exactly two digits, whatever follows them.
func (d *httpDateScanner) twoDigits() (int, bool) {
	if d.i+2 > len(d.s) || !feedbackIsDigit(d.s[d.i]) || !feedbackIsDigit(d.s[d.i+1]) {
		return 0, false
	}
	n := int(d.s[d.i]-'0')*10 + int(d.s[d.i+1]-'0')
	d.i += 2
	return n, true
}

func (d *httpDateScanner) accept(c byte) bool {
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// clock consumes hh:mm:ss with an optional fraction of a second.
func (d *httpDateScanner) clock() (hour, minute, sec, nsec int, ok bool) {
	var ok1, ok2, ok3 bool
	hour, _, ok1 = d.num(1, 2)
	if !ok1 || !d.accept(':') {
		return 0, 0, 0, 0, false
	}
	minute, _, ok2 = d.num(2, 2)
	if !ok2 || !d.accept(':') {
		return 0, 0, 0, 0, false
	}
	sec, _, ok3 = d.num(2, 2)
	if !ok3 || hour > 23 || minute > 59 || sec > 60 {
		return 0, 0, 0, 0, false
	}
	if d.accept('.') {
		scale, digits := int(1e8), 0
		for d.i < len(d.s) && feedbackIsDigit(d.s[d.i]) {
			nsec += int(d.s[d.i]-'0') * scale
			scale /= 10
			d.i++
			digits++
		}
		if digits == 0 {
			return 0, 0, 0, 0, false
		}
	}
	return hour, minute, sec, nsec, true
}

// zone consumes an optional zone at the end of a date: GMT, UTC, UT or Z (any
// case), or a numeric +hhmm / -hhmm (or +hh:mm). A missing zone means GMT, as
// every HTTP-date is in GMT. A named zone other than these (EST, CET…) is
// rejected: its offset cannot be known.
func (d *httpDateScanner) zone() (offsetSec int, ok bool) {
	if d.done() {
		return 0, true
	}
	if c := d.peek(); c == '+' || c == '-' {
		d.i++
		h, okh := d.twoDigits()
		d.accept(':')
		m, okm := d.twoDigits()
		if !okh || !okm || h > 23 || m > 59 {
			return 0, false
		}
		off := (h*60 + m) * 60
		if c == '-' {
			off = -off
		}
		return off, true
	}
	switch w := d.word(); {
	case feedbackEqualFold(w, "GMT"), feedbackEqualFold(w, "UTC"),
		feedbackEqualFold(w, "UT"), feedbackEqualFold(w, "Z"):
		return 0, true
	}
	return 0, false
}

// parseHTTPDate reads the three HTTP-date forms of RFC 9110 section 5.6.7,
//
//	IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
//	RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
//	asctime      Sun Nov  6 08:49:37 1994
//
// and the lenient variants real servers send: a one-digit day, a fractional
// second, a zone of UTC, UT, Z or a numeric offset instead of GMT, a missing
// zone or day name, and names in any case. A weekday is checked for syntax
// only. A two-digit year is read as RFC 9110 asks: never more than 50 years
// after now, and otherwise the nearest such year. It does not use time.Parse, whose
// reading of zone names depends on the local time zone.
func parseHTTPDate(s string, now time.Time) (time.Time, bool) {
	d := httpDateScanner{s: s}
	if feedbackIsAlpha(d.peek()) {
		save := d.i
		if w := d.word(); httpDateWeekday(w) {
			d.accept(',')
			d.spaces()
		} else {
			d.i = save // asctime without a weekday: the word is the month
		}
	}
	var (
		year, day, hour, minute, sec, nsec int
		month                              time.Month
		ok                                 bool
		yearDigits                         int
	)
	if feedbackIsDigit(d.peek()) { // IMF-fixdate, RFC 850 and RFC 1123-like forms
		if day, _, ok = d.num(1, 2); !ok {
			return time.Time{}, false
		}
		dash := d.accept('-')
		if !dash && d.spaces() == 0 {
			return time.Time{}, false
		}
		if month = httpDateMonth(d.word()); month == 0 {
			return time.Time{}, false
		}
		if dash && !d.accept('-') || !dash && d.spaces() == 0 {
			return time.Time{}, false
		}
		if year, yearDigits, ok = d.num(2, 4); !ok || yearDigits == 3 {
			return time.Time{}, false
		}
		if d.spaces() == 0 {
			return time.Time{}, false
		}
		if hour, minute, sec, nsec, ok = d.clock(); !ok {
			return time.Time{}, false
		}
	} else { // asctime
		if month = httpDateMonth(d.word()); month == 0 || d.spaces() == 0 {
			return time.Time{}, false
		}
		if day, _, ok = d.num(1, 2); !ok || d.spaces() == 0 {
			return time.Time{}, false
		}
		if hour, minute, sec, nsec, ok = d.clock(); !ok || d.spaces() == 0 {
			return time.Time{}, false
		}
		if year, yearDigits, ok = d.num(4, 4); !ok {
			return time.Time{}, false
		}
	}
	d.spaces()
	off, ok := d.zone()
	if !ok || !d.done() {
		return time.Time{}, false
	}
	if yearDigits == 2 { // the year in (now-50, now+50] with these last digits
		year += now.Year() / 100 * 100
		if year > now.Year()+50 {
			year -= 100
		} else if year <= now.Year()-50 {
			year += 100
		}
	}
	if day < 1 || day > httpDateDaysIn(month, year) {
		return time.Time{}, false
	}
	t := time.Date(year, month, day, hour, minute, sec, nsec, time.UTC)
	return t.Add(-time.Duration(off) * time.Second), true
}

// parseRFC3339 reads an RFC 3339 timestamp (2025-01-02T15:04:05.5Z,
// …+01:00), as Anthropic sends its resets, without time.Parse's allocation
// on failure.
func parseRFC3339(s string) (time.Time, bool) {
	d := httpDateScanner{s: s}
	year, _, ok1 := d.num(4, 4)
	if !ok1 || !d.accept('-') {
		return time.Time{}, false
	}
	mon, _, ok2 := d.num(2, 2)
	if !ok2 || !d.accept('-') {
		return time.Time{}, false
	}
	day, _, ok3 := d.num(2, 2)
	if !ok3 || mon < 1 || mon > 12 || day < 1 || day > httpDateDaysIn(time.Month(mon), year) {
		return time.Time{}, false
	}
	if c := d.peek(); c != 'T' && c != 't' && c != ' ' {
		return time.Time{}, false
	}
	d.i++
	hour, minute, sec, nsec, ok := d.clock()
	if !ok || d.done() {
		return time.Time{}, false // RFC 3339 requires a zone
	}
	var off int
	switch c := d.peek(); c {
	case 'Z', 'z':
		d.i++
	case '+', '-':
		d.i++
		h, _, okh := d.num(2, 2)
		if !okh || !d.accept(':') {
			return time.Time{}, false
		}
		m, _, okm := d.num(2, 2)
		if !okm || h > 23 || m > 59 {
			return time.Time{}, false
		}
		off = (h*60 + m) * 60
		if c == '-' {
			off = -off
		}
	default:
		return time.Time{}, false
	}
	if !d.done() {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(mon), day, hour, minute, sec, nsec, time.UTC)
	return t.Add(-time.Duration(off) * time.Second), true
}

// httpDateWeekday reports whether w names a day of the week, abbreviated or in
// full, in any case.
func httpDateWeekday(w string) bool {
	for _, name := range [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"} {
		if feedbackEqualFold(w, name[:3]) || feedbackEqualFold(w, name) {
			return true
		}
	}
	return false
}

// httpDateMonth returns the month w names, abbreviated or in full, in any case;
// 0 when it names none.
func httpDateMonth(w string) time.Month {
	for m := time.January; m <= time.December; m++ {
		name := m.String()
		if feedbackEqualFold(w, name[:3]) || feedbackEqualFold(w, name) {
			return m
		}
	}
	return 0
}

// httpDateDaysIn returns the number of days in month m of year y.
func httpDateDaysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// feedbackEqualFold reports whether a and b are equal under ASCII case folding.
func feedbackEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
