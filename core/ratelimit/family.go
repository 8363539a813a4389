package ratelimit

import (
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
)

// The naming families. A header whose name holds "ratelimit" or
// "rate-limit" and is not one of the exact names of headers.go is read by its
// parts: the family (everything up to and including "ratelimit-", such as
// "x-ratelimit-", "x-sentry-rate-limit-", "gw-ratelimit-"), one field, an
// optional dimension and an optional window, the last three in any order:
//
//	x-ratelimit-limit-requests-day       field, dimension, window
//	x-ratelimit-reset-tokens-per-minute  field, dimension, "per", window
//	x-ratelimit-complexity-remaining     dimension, field
//	x-ratelimit-minute-limit             window, field
//	x-rate-limit-api-token-max           dimension of two words, field
//
// A vendor's bare family name ("X-Discogs-Ratelimit") and a window alone
// ("X-HubSpot-RateLimit-Secondly") are a limit. Headers of one family,
// dimension and window make one quota. A name with no field, two fields, or
// a dimension split by its field says no quota and is ignored.

// familyField is what one family header holds.
type familyField uint8

const (
	famNone       familyField = iota
	famLimit                  // limit, max, quota, total
	famRemaining              // remaining, remain, left
	famUsed                   // used, usage: the remaining count is limit - used
	famReset                  // reset: any encoding parseFeedbackReset reads
	famResetAfter             // reset-after, reset-in, retry-after: seconds from now
	famResetMs                // reset-ms, reset-after-ms, retry-after-ms: milliseconds from now
	famWindow                 // window, interval, period: the window's length in seconds
	famWindowMs               // window-ms, interval-ms, period-ms: in milliseconds
)

// familyFieldWords maps a field's words, joined by '-', to the field. The
// longest match wins ("reset-after-ms" before "reset-after" before "reset").
var familyFieldWords = map[string]familyField{
	"limit": famLimit, "max": famLimit, "quota": famLimit, "total": famLimit,
	"remaining": famRemaining, "remain": famRemaining, "left": famRemaining,
	"used": famUsed, "usage": famUsed,
	"reset": famReset, "resets": famReset, "resettime": famReset,
	"reset-after": famResetAfter, "reset-in": famResetAfter, "retry-after": famResetAfter,
	"reset-ms": famResetMs, "reset-after-ms": famResetMs, "retry-after-ms": famResetMs,
	"window": famWindow, "interval": famWindow, "period": famWindow,
	"window-ms": famWindowMs, "interval-ms": famWindowMs, "period-ms": famWindowMs,
	"window-milliseconds": famWindowMs, "interval-milliseconds": famWindowMs, "period-milliseconds": famWindowMs,
}

// familyNoiseWords carry no meaning of their own: "per-minute" is "minute",
// "time-reset-ms" is "reset-ms", "reset-timestamp" is "reset".
var familyNoiseWords = map[string]bool{"per": true, "time": true, "timestamp": true, "date": true}

// familyWindowUnits maps a window word, or the unit after a count ("24hour",
// "10s"), to its length. A length of -1 names a window of no fixed length (a
// calendar month), reported as unknown.
var familyWindowUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second, "secondly": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute, "minutely": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "hourly": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour, "daily": 24 * time.Hour,
	"week": 7 * 24 * time.Hour, "weekly": 7 * 24 * time.Hour,
	"month": -1, "monthly": -1,
}

// familyMaxWords bounds the words after the family, and familyMaxDimWords
// the words of a dimension.
const (
	familyMaxWords    = 8
	familyMaxDimWords = 4
	familyMaxNameLen  = 64
)

// familyName is a family header's name, read.
type familyName struct {
	family   string // lower case, with its trailing '-' ("x-ratelimit-")
	dim      string // lower case; "" for none
	field    familyField
	window   time.Duration // the window's length from the name: -1 unknown length, 0 none
	windowed bool          // whether the name says a window
}

// familyCandidate reports cheaply whether k may name a family header: it
// holds "ratelimit" or "rate-limit" in any case.
func familyCandidate(k string) bool {
	if len(k) < len("x-ratelimit") || len(k) > familyMaxNameLen {
		return false
	}
	if _, end := familyMarker(k); end < 0 {
		return false
	}
	for i := range len(k) { // a token of letters, digits and '-', so re-casing it is exact
		if c := k[i]; c != '-' && !ascii.IsAlpha(c) && !ascii.IsDigit(c) {
			return false
		}
	}
	return true
}

// familyMarker returns where the first "ratelimit" or "rate-limit" in k (any
// case) starts and the index just past it; -1, -1 when there is none.
func familyMarker(k string) (start, end int) {
	for i := 0; i+len("ratelimit") <= len(k); i++ {
		if k[i]|0x20 != 'r' || k[i+1]|0x20 != 'a' || k[i+2]|0x20 != 't' || k[i+3]|0x20 != 'e' {
			continue
		}
		rest := k[i+4:]
		if len(rest) >= 5 && ascii.EqualFold(rest[:5], "limit") {
			return i, i + 9
		}
		if len(rest) >= 6 && rest[0] == '-' && ascii.EqualFold(rest[1:6], "limit") {
			return i, i + 10
		}
	}
	return -1, -1
}

// parseFamilyName reads a family header's name; ok is false when the name
// does not say one field of a quota. A vendor's bare family name
// ("X-Discogs-Ratelimit") is the limit of its family's quota.
func parseFamilyName(k string) (n familyName, ok bool) {
	start, end := familyMarker(k)
	if end < 0 {
		return n, false
	}
	lower := strings.ToLower(k)
	if end == len(k) {
		if start == 0 || k[start-1] != '-' {
			return n, false
		}
		return familyName{family: lower + "-", field: famLimit}, true
	}
	if k[end] != '-' {
		return n, false
	}
	n.family = lower[:end+1]
	var words [familyMaxWords]string
	nw := 0
	for w := range strings.SplitSeq(lower[end+1:], "-") {
		if nw == len(words) || w == "" || !familyWord(w) {
			return n, false
		}
		words[nw] = w
		nw++
	}

	// The field: the longest run of words that names one; exactly one run.
	fieldAt, fieldLen := -1, 0
	for i := 0; i < nw; i++ {
		for l := min(3, nw-i); l >= 1; l-- {
			f, found := familyFieldWords[strings.Join(words[i:i+l], "-")]
			if !found {
				continue
			}
			if fieldAt >= 0 {
				return n, false // two fields
			}
			n.field, fieldAt, fieldLen = f, i, l
			i += l - 1
			break
		}
	}
	conc := ""
	if fieldAt < 0 {
		// Sentry's "concurrentlimit", "concurrentremaining": a dimension
		// and a field in one word.
		for i := 0; i < nw && fieldAt < 0; i++ {
			if rest, cut := strings.CutPrefix(words[i], "concurrent"); cut {
				if f := familyFieldWords[rest]; f == famLimit || f == famRemaining {
					n.field, fieldAt, fieldLen, conc = f, i, 1, "concurrent"
				}
			}
		}
		if fieldAt < 0 && nw == 1 {
			// HubSpot's "X-HubSpot-RateLimit-Secondly: 11": a window
			// alone names that window's limit.
			if d, ok := familyWindow(words[0]); ok {
				return familyName{family: n.family, field: famLimit, window: d, windowed: true}, true
			}
		}
		if fieldAt < 0 {
			return n, false
		}
	}

	// What is left: the window at either end, the dimension between.
	var rest [familyMaxWords]string
	nr := 0
	for i := range nw {
		if (i < fieldAt || i >= fieldAt+fieldLen) && !familyNoiseWords[words[i]] {
			rest[nr] = words[i]
			nr++
		}
	}
	if nr > 0 {
		if d, ok := familyWindow(rest[nr-1]); ok {
			n.window, n.windowed = d, true
			nr--
		} else if d, ok := familyWindow(rest[0]); ok {
			n.window, n.windowed = d, true
			copy(rest[:], rest[1:nr])
			nr--
		}
	}
	if nr > familyMaxDimWords || nr > 0 && conc != "" {
		return n, false
	}
	// The dimension's words must stand together in the name: a field
	// between them ("input-limit-tokens") says no single quota.
	if nr > 0 && !strings.Contains(lower[end:]+"-", "-"+strings.Join(rest[:nr], "-")+"-") {
		return n, false
	}
	n.dim = strings.Join(rest[:nr], "-")
	if conc != "" {
		n.dim = conc
	}
	return n, true
}

// familyWord reports whether w is a word of a family header's name:
// letters and digits.
func familyWord(w string) bool {
	for i := range len(w) {
		if !ascii.IsAlpha(w[i]) && !ascii.IsDigit(w[i]) {
			return false
		}
	}
	return true
}

// familyWindow reads a window word: a unit ("minute", "daily") or a count
// and a unit ("24hour", "10s", "1m").
func familyWindow(w string) (time.Duration, bool) {
	i := 0
	for i < len(w) && i < 4 && ascii.IsDigit(w[i]) {
		i++
	}
	unit, found := familyWindowUnits[w[i:]]
	if !found || i < len(w) && ascii.IsDigit(w[i]) || i == 0 && len(w) == 1 {
		return 0, false // a lone letter ("d") is a word, not a window; "10s" is one
	}
	count := 1
	if i > 0 {
		count = 0
		for _, c := range w[:i] {
			count = count*10 + int(c-'0')
		}
		if count == 0 {
			return 0, false
		}
	}
	if unit < 0 {
		return -1, true
	}
	return time.Duration(count) * unit, true
}

// familyQuotaName returns the quota name and unit a family dimension
// reports: "requests" for none, tokens for a dimension that counts tokens,
// concurrent requests for a concurrency limit, a cost unit (points,
// complexity, weight, credits) as itself, and requests for any other
// dimension (a scope such as "subscription-reads" or "api-token").
func familyQuotaName(dim string) (name, unit string) {
	switch dim {
	case "", "request", "requests", "req", "reqs":
		return "requests", "requests"
	case "token", "tokens":
		return "tokens", "tokens"
	}
	name, unit = dim, "requests"
	for w := range strings.SplitSeq(dim, "-") {
		switch {
		case w == "tokens":
			unit = "tokens"
		case strings.HasPrefix(w, "concurren"):
			return "concurrent-requests", "concurrent-requests"
		case w == "points", w == "point":
			unit = "points"
		case w == "complexity", w == "cost", w == "weight", w == "credits":
			unit = w
		}
	}
	return name, unit
}
