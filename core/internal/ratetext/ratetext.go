// Package ratetext reads the text form of a rate, <count>/<period>: the
// grammar core.Rate.UnmarshalText documents.
package ratetext

import (
	"strconv"
	"strings"
	"time"
)

// units are the period words read besides Go durations.
var units = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour,
}

// Parse reads s as <count>/<period>. It returns the count and the period,
// or why s is not a rate ("" when it is), worded to follow "is invalid: ".
// It does not check that count per period is at most one per nanosecond.
func Parse(s string) (count int, period time.Duration, why string) {
	c, p, ok := strings.Cut(s, "/")
	c, p = trimBlank(c), trimBlank(p)
	switch {
	case trimBlank(s) == "":
		return 0, 0, "it is empty; write e.g. \"5/s\", \"300/min\" or \"10/100ms\""
	case !ok:
		return 0, 0, "the period is missing; write <count>/<period>, e.g. \"5/s\", \"300/min\" or \"10/100ms\""
	case c == "":
		return 0, 0, "the count before the slash is missing"
	case p == "":
		return 0, 0, "the period after the slash is missing"
	}
	if count, why = parseCount(c); why != "" {
		return 0, 0, why
	}
	if period, why = parsePeriod(p); why != "" {
		return 0, 0, why
	}
	return count, period, ""
}

// parseCount reads the count: digits only, no sign, positive, within int.
func parseCount(s string) (int, string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			return 0, "the count " + strconv.Quote(s) + " is not a positive whole number"
		}
	}
	n, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil { // digits only: the only error left is the range
		return 0, "the count " + s + " is too large"
	}
	if n == 0 {
		return 0, "the count must be positive, got 0"
	}
	return int(n), ""
}

// parsePeriod reads the period: a unit word or a Go duration, positive.
func parsePeriod(s string) (time.Duration, string) {
	if d, ok := units[s]; ok {
		return d, ""
	}
	p := s
	if c := s[0]; c != '.' && (c < '0' || c > '9') && c != '+' && c != '-' {
		p = "1" + s // a bare unit: one of it
	}
	d, err := time.ParseDuration(p)
	if err != nil {
		return 0, "the period " + strconv.Quote(s) + " is not a duration (s, min, h, or a Go duration such as 100ms or 1m30s)"
	}
	if d <= 0 {
		return 0, "the period must be positive, got " + d.String()
	}
	return d, ""
}

// trimBlank trims the spaces and tabs around s.
func trimBlank(s string) string { return strings.Trim(s, " \t") }
