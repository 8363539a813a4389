package core

import (
	"math"
	"time"
)

// xrlDimension is one quota of a provider's per-dimension headers.
type xrlDimension struct {
	name, unit              string
	limit, remaining, reset feedbackHeader
}

// xrlDimensions lists the per-dimension headers level 3 reads, in the order
// their quotas are reported.
//
// OpenAI (and Azure OpenAI, Groq…) sends x-ratelimit-{limit,remaining,reset}-
// {requests,tokens}, the reset as a Go-style duration ("6m0s", "20ms"; Azure
// sends plain seconds). Anthropic sends anthropic-ratelimit-{requests,tokens,
// input-tokens,output-tokens}-{limit,remaining,reset}, the reset as an
// RFC 3339 time.
var xrlDimensions = [...]xrlDimension{
	{"requests", "requests",
		fbHdrOpenAILimitRequests, fbHdrOpenAIRemainingRequests, fbHdrOpenAIResetRequests},
	{"tokens", "tokens",
		fbHdrOpenAILimitTokens, fbHdrOpenAIRemainingTokens, fbHdrOpenAIResetTokens},
	{"requests", "requests",
		fbHdrAnthropicRequestsLimit, fbHdrAnthropicRequestsRemaining, fbHdrAnthropicRequestsReset},
	{"tokens", "tokens",
		fbHdrAnthropicTokensLimit, fbHdrAnthropicTokensRemaining, fbHdrAnthropicTokensReset},
	{"input-tokens", "tokens",
		fbHdrAnthropicInputTokensLimit, fbHdrAnthropicInputTokensRemaining, fbHdrAnthropicInputTokensReset},
	{"output-tokens", "tokens",
		fbHdrAnthropicOutputTokensLimit, fbHdrAnthropicOutputTokensRemaining, fbHdrAnthropicOutputTokensReset},
}

// parseXRateLimitFeedback reads level 3 of ParseFeedback into qs and reports
// whether it applies (some quota had a valid remaining count): the
// X-RateLimit-* headers (else the X-Rate-Limit-* spelling), then the
// per-dimension headers of xrlDimensions. Every quota counts for the binding
// choice, tokens included: a spent tokens quota refuses the next request as
// surely as a spent requests quota.
func parseXRateLimitFeedback(hs *feedbackHeaders, now time.Time, qs *feedbackQuotas) bool {
	if !parseXRateLimitFamily(hs, now, qs,
		fbHdrXRLLimit, fbHdrXRLRemaining, fbHdrXRLReset, fbHdrXRLResetAfter, fbHdrXRLUsed, fbHdrXRLResource) {
		parseXRateLimitFamily(hs, now, qs,
			fbHdrXRL2Limit, fbHdrXRL2Remaining, fbHdrXRL2Reset, fbHdrXRL2ResetAfter, fbHdrNone, fbHdrNone)
	}
	for i := range xrlDimensions {
		d := &xrlDimensions[i]
		remaining, ok := feedbackFirstCount(hs.get(d.remaining))
		if !ok {
			continue
		}
		q := Quota{Name: d.name, Unit: d.unit, Remaining: remaining, Limit: -1, Reset: -1}
		if limit, ok := feedbackFirstCount(hs.get(d.limit)); ok {
			q.Limit = limit
		}
		if reset, ok := feedbackFirstReset(hs.get(d.reset), now); ok {
			q.Reset = reset
		}
		qs.add(q, true)
	}
	return qs.n > 0
}

// parseXRateLimitFamily reads one single-quota family into qs and reports
// whether it found a valid remaining count. GitHub's X-RateLimit-Used gives
// the remaining count (limit - used) when X-RateLimit-Remaining is missing,
// and X-RateLimit-Resource ("core", "search"…) names the quota. A
// Reset-After (seconds from now, as Discord sends) is preferred to Reset,
// because it does not depend on the two clocks agreeing. usedH and
// resourceH are fbHdrNone for a family without them.
func parseXRateLimitFamily(hs *feedbackHeaders, now time.Time, qs *feedbackQuotas,
	limitH, remainingH, resetH, resetAfterH, usedH, resourceH feedbackHeader) bool {
	q := Quota{Name: "requests", Unit: "requests", Remaining: -1, Limit: -1, Reset: -1}
	if limit, ok := feedbackFirstCount(hs.get(limitH)); ok {
		q.Limit = limit
	}
	if remaining, ok := feedbackFirstCount(hs.get(remainingH)); ok {
		q.Remaining = remaining
	} else if usedH != fbHdrNone && q.Limit >= 0 {
		if used, ok := feedbackFirstCount(hs.get(usedH)); ok {
			q.Remaining = max(q.Limit-used, 0)
		}
	}
	if q.Remaining < 0 {
		return false
	}
	if d, ok := feedbackFirstResetAfter(hs.get(resetAfterH)); ok {
		q.Reset = d
	} else if d, ok := feedbackFirstReset(hs.get(resetH), now); ok {
		q.Reset = d
	}
	if resourceH != fbHdrNone {
		for _, v := range hs.get(resourceH) {
			if v = feedbackTrimOWS(v); v != "" && len(v) <= 64 {
				q.Name = v
				break
			}
		}
	}
	qs.add(q, true)
	return true
}

// feedbackFirstCount returns the first valid count among vals (see
// parseFeedbackCount).
func feedbackFirstCount(vals []string) (int, bool) {
	for _, v := range vals {
		if n, ok := parseFeedbackCount(v); ok {
			return n, true
		}
	}
	return 0, false
}

// feedbackFirstReset returns the first valid reset among vals (see
// parseFeedbackReset).
func feedbackFirstReset(vals []string, now time.Time) (time.Duration, bool) {
	for _, v := range vals {
		if d, ok := parseFeedbackReset(v, now); ok {
			return d, true
		}
	}
	return 0, false
}

// feedbackFirstResetAfter returns the first valid reset-after among vals: a
// non-negative decimal number of seconds, or a Go-style duration.
func feedbackFirstResetAfter(vals []string) (time.Duration, bool) {
	for _, v := range vals {
		v = feedbackTrimOWS(v)
		if d, ok := parseFeedbackDecimalDuration(v, time.Second); ok {
			return d, true
		}
		if d, ok := parseGoDuration(v); ok {
			return d, true
		}
	}
	return 0, false
}

// parseFeedbackCount reads a quota count: a non-negative integer, saturated at
// math.MaxInt. Only the first element of a list is read ("100, 100;w=60"
// gives 100, as the older RateLimit-Limit draft writes it). A negative count
// (Azure sends -1 for "no limit") is invalid, not spent.
func parseFeedbackCount(v string) (int, bool) {
	for i := range len(v) {
		if v[i] == ',' || v[i] == ';' {
			v = v[:i]
			break
		}
	}
	v = feedbackTrimOWS(v)
	if v == "" {
		return 0, false
	}
	n := 0
	for i := range len(v) {
		if !feedbackIsDigit(v[i]) {
			return 0, false
		}
		d := int(v[i] - '0')
		if n > (math.MaxInt-d)/10 {
			n = math.MaxInt
			continue
		}
		n = n*10 + d
	}
	return n, true
}

// parseFeedbackReset reads the time until a quota is restored, as seen at now:
//
//   - a bare non-negative number v (decimals allowed), told apart by size:
//     v < 1e9 is seconds from now (under 32 years), 1e9 <= v < 1e12 a Unix
//     time in seconds, v >= 1e12 a Unix time in milliseconds;
//   - a Go-style duration ("6m0s", "1h2m3.5s", "20ms"), as OpenAI sends;
//   - an RFC 3339 time, as Anthropic sends, or an HTTP-date.
//
// A time in the past gives 0.
func parseFeedbackReset(v string, now time.Time) (time.Duration, bool) {
	v = feedbackTrimOWS(v)
	if d, ok := parseFeedbackDecimal(v); ok {
		switch {
		case d.ip < 1e9:
			return d.duration(time.Second), true
		case d.ip < 1e12:
			return feedbackUntilUnix(d.ip, d.frac, now), true
		default:
			return feedbackUntilUnix(d.ip/1000, d.ip%1000*1e6+d.frac/1000, now), true
		}
	}
	if d, ok := parseGoDuration(v); ok {
		return d, true
	}
	if t, ok := parseRFC3339(v); ok {
		return max(t.Sub(now), 0), true
	}
	if t, ok := parseHTTPDate(v, now); ok {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// feedbackUntilUnix returns the time from now until the Unix time sec.nsec,
// 0 when it has passed. sec is at most feedbackDecimalMax (about 4.6e18), far
// from where time.Unix would overflow, and Time.Sub saturates.
func feedbackUntilUnix(sec, nsec uint64, now time.Time) time.Duration {
	return max(time.Unix(int64(sec), int64(nsec)).Sub(now), 0)
}

// parseGoDuration reads a duration written as Go prints one: one or more
// non-negative decimal numbers each followed by a unit (h, m, s, ms, us, µs,
// ns), such as "6m0s", "1h2m3.5s", "0.5s" or "20ms". Unlike
// time.ParseDuration it accepts no sign, and it saturates instead of failing
// on overflow.
func parseGoDuration(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && (feedbackIsDigit(s[i]) || s[i] == '.') {
			i++
		}
		num, ok := parseFeedbackDecimal(s[:i])
		if !ok {
			return 0, false
		}
		s = s[i:]
		j := 0
		for j < len(s) && !feedbackIsDigit(s[j]) && s[j] != '.' {
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
		d := num.duration(unit)
		if total > math.MaxInt64-d {
			total = math.MaxInt64
		} else {
			total += d
		}
	}
	return total, true
}
