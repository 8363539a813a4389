// Package num reads the numbers and durations rate-limit headers carry:
// non-negative decimals ("2", "2.0", "599.0"), counts, and durations written
// as Go prints them ("6m0s", "20ms"). Every reader rejects signs, exponents,
// NaN and Inf, saturates instead of overflowing, and allocates nothing.
package num

import (
	"math"
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
)

// Decimal is a non-negative decimal number: its integer part (saturated at
// DecimalMax) and its fraction in billionths (the first nine digits; the rest
// are dropped).
type Decimal struct {
	Int  uint64
	Frac uint64
}

// DecimalMax saturates integer parts: larger numbers are all "huge".
const DecimalMax = 1 << 62

// ParseDecimal reads DIGIT* ["." DIGIT*] with at least one digit and nothing
// else: no sign, no exponent, no spaces, no "NaN" or "Inf".
func ParseDecimal(s string) (Decimal, bool) {
	var d Decimal
	digits, i := 0, 0
	for ; i < len(s) && ascii.IsDigit(s[i]); i++ {
		d.Int = min(d.Int*10+uint64(s[i]-'0'), DecimalMax)
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		scale := uint64(1e8)
		for ; i < len(s) && ascii.IsDigit(s[i]); i++ {
			d.Frac += uint64(s[i]-'0') * scale
			scale /= 10
			digits++
		}
	}
	return d, digits > 0 && i == len(s)
}

// Duration returns d units as a Duration, saturated at math.MaxInt64.
func (d Decimal) Duration(unit time.Duration) time.Duration {
	u := uint64(unit)
	if d.Int > math.MaxInt64/u {
		return math.MaxInt64
	}
	n := d.Int * u
	var f uint64
	if u%1e9 == 0 {
		f = d.Frac * (u / 1e9)
	} else {
		f = d.Frac * u / 1e9
	}
	if n > math.MaxInt64-f {
		return math.MaxInt64
	}
	return time.Duration(n + f)
}

// ParseDuration reads a non-negative decimal number of units.
func ParseDuration(s string, unit time.Duration) (time.Duration, bool) {
	d, ok := ParseDecimal(s)
	if !ok {
		return 0, false
	}
	return d.Duration(unit), true
}

// ParseCount reads a quota count: a non-negative decimal number, white space
// around it trimmed, its fraction dropped ("599.0" is 599, as Reddit sends
// it), saturated at math.MaxInt.
func ParseCount(s string) (int, bool) {
	d, ok := ParseDecimal(ascii.TrimOWS(s))
	if !ok {
		return 0, false
	}
	if d.Int >= DecimalMax {
		return math.MaxInt, true // saturated while parsing
	}
	return int(min(d.Int, math.MaxInt)), true
}

// ParseGoDuration reads a duration written as Go prints one: one or more
// non-negative decimal numbers each followed by a unit (h, m, s, ms, us, µs,
// ns), such as "6m0s", "1h2m3.5s", "0.5s" or "20ms". Unlike
// time.ParseDuration it accepts no sign, and it saturates instead of failing
// on overflow.
func ParseGoDuration(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && (ascii.IsDigit(s[i]) || s[i] == '.') {
			i++
		}
		n, ok := ParseDecimal(s[:i])
		if !ok {
			return 0, false
		}
		s = s[i:]
		j := 0
		for j < len(s) && !ascii.IsDigit(s[j]) && s[j] != '.' {
			j++
		}
		var unit time.Duration
		switch s[:j] {
		case "h":
			unit = time.Hour
		case "m":
			unit = time.Minute
		case "s":
			unit = time.Second
		case "ms":
			unit = time.Millisecond
		case "us", "µs", "μs": // U+00B5 and U+03BC, as time.ParseDuration
			unit = time.Microsecond
		case "ns":
			unit = time.Nanosecond
		default:
			return 0, false
		}
		s = s[j:]
		d := n.Duration(unit)
		if total > math.MaxInt64-d {
			total = math.MaxInt64
		} else {
			total += d
		}
	}
	return total, true
}
