// Package httpdate reads the dates rate-limit headers carry: the three
// HTTP-date forms of RFC 9110 section 5.6.7 (leniently, as real servers send
// them) and RFC 3339 timestamps. It does not use time.Parse, whose reading of
// zone names depends on the local time zone and which allocates on failure.
package httpdate

import (
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
)

// scanner walks a date string left to right; every method consumes only
// what it matched.
type scanner struct {
	s string
	i int
}

func (d *scanner) done() bool { return d.i >= len(d.s) }

func (d *scanner) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

// spaces skips SP and HTAB and returns how many it skipped.
func (d *scanner) spaces() int {
	n := 0
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t') {
		d.i++
		n++
	}
	return n
}

// word consumes a run of ASCII letters.
func (d *scanner) word() string {
	j := d.i
	for d.i < len(d.s) && ascii.IsAlpha(d.s[d.i]) {
		d.i++
	}
	return d.s[j:d.i]
}

// num consumes minDigits to maxDigits decimal digits and returns their value.
func (d *scanner) num(minDigits, maxDigits int) (n, digits int, ok bool) {
	for d.i < len(d.s) && ascii.IsDigit(d.s[d.i]) && digits < maxDigits {
		n = n*10 + int(d.s[d.i]-'0')
		d.i++
		digits++
	}
	if d.i < len(d.s) && ascii.IsDigit(d.s[d.i]) {
		return 0, 0, false // too many digits
	}
	return n, digits, digits >= minDigits
}

// twoDigits consumes exactly two digits, whatever follows them.
func (d *scanner) twoDigits() (int, bool) {
	if d.i+2 > len(d.s) || !ascii.IsDigit(d.s[d.i]) || !ascii.IsDigit(d.s[d.i+1]) {
		return 0, false
	}
	n := int(d.s[d.i]-'0')*10 + int(d.s[d.i+1]-'0')
	d.i += 2
	return n, true
}

func (d *scanner) accept(c byte) bool {
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// clock consumes hh:mm:ss with an optional fraction of a second.
func (d *scanner) clock() (hour, minute, sec, nsec int, ok bool) {
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
		for d.i < len(d.s) && ascii.IsDigit(d.s[d.i]) {
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
func (d *scanner) zone() (offsetSec int, ok bool) {
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
	case ascii.EqualFold(w, "GMT"), ascii.EqualFold(w, "UTC"),
		ascii.EqualFold(w, "UT"), ascii.EqualFold(w, "Z"):
		return 0, true
	}
	return 0, false
}

// Parse reads the three HTTP-date forms of RFC 9110 section 5.6.7,
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
func Parse(s string, now time.Time) (time.Time, bool) {
	d := scanner{s: s}
	if ascii.IsAlpha(d.peek()) {
		save := d.i
		if w := d.word(); isWeekday(w) {
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
	if ascii.IsDigit(d.peek()) { // IMF-fixdate, RFC 850 and RFC 1123-like forms
		if day, _, ok = d.num(1, 2); !ok {
			return time.Time{}, false
		}
		dash := d.accept('-')
		if !dash && d.spaces() == 0 {
			return time.Time{}, false
		}
		if month = monthNamed(d.word()); month == 0 {
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
		if month = monthNamed(d.word()); month == 0 || d.spaces() == 0 {
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
	if day < 1 || day > daysIn(month, year) {
		return time.Time{}, false
	}
	t := time.Date(year, month, day, hour, minute, sec, nsec, time.UTC)
	return t.Add(-time.Duration(off) * time.Second), true
}

// ParseRFC3339 reads an RFC 3339 timestamp (2025-01-02T15:04:05.5Z,
// …+01:00), as Anthropic sends its resets, without time.Parse's allocation
// on failure.
func ParseRFC3339(s string) (time.Time, bool) {
	d := scanner{s: s}
	year, _, ok1 := d.num(4, 4)
	if !ok1 || !d.accept('-') {
		return time.Time{}, false
	}
	mon, _, ok2 := d.num(2, 2)
	if !ok2 || !d.accept('-') {
		return time.Time{}, false
	}
	day, _, ok3 := d.num(2, 2)
	if !ok3 || mon < 1 || mon > 12 || day < 1 || day > daysIn(time.Month(mon), year) {
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

// isWeekday reports whether w names a day of the week, abbreviated or in
// full, in any case.
func isWeekday(w string) bool {
	for _, name := range [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"} {
		if ascii.EqualFold(w, name[:3]) || ascii.EqualFold(w, name) {
			return true
		}
	}
	return false
}

// monthNamed returns the month w names, abbreviated or in full, in any case;
// 0 when it names none.
func monthNamed(w string) time.Month {
	for m := time.January; m <= time.December; m++ {
		name := m.String()
		if ascii.EqualFold(w, name[:3]) || ascii.EqualFold(w, name) {
			return m
		}
	}
	return 0
}

// daysIn returns the number of days in month m of year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
