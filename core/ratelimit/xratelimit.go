package ratelimit

import (
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
	"github.com/headgate-go/headgate/core/internal/httpdate"
	"github.com/headgate-go/headgate/core/internal/num"
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

// parseXRateLimitFeedback reads level 3 of Parse into qs and reports
// whether it applies (some quota had a valid remaining count): the
// X-RateLimit-* headers (else the X-Rate-Limit-* spelling), then the
// per-dimension headers of xrlDimensions, then the headers named by family
// (family.go), then the vendor quota formats of Shopify and Salesforce (see
// parseUsedOfLimit). Every quota counts for the binding choice, tokens and
// concurrency included: a spent tokens quota refuses the next request as
// surely as a spent requests quota.
func parseXRateLimitFeedback(hs *feedbackHeaders, now time.Time, qs *feedbackQuotas) bool {
	var gs [familyMaxGroups]familyGroup
	groups := gs[:0]
	if hs.fam.n > 0 {
		groups = gs[:familyGroups(&hs.fam, &gs)]
	}
	if !parseXRateLimitFamily(hs, now, qs, familyBase(groups, "x-ratelimit-"),
		fbHdrXRLLimit, fbHdrXRLRemaining, fbHdrXRLReset, fbHdrXRLResetAfter, fbHdrXRLUsed, fbHdrXRLResource) {
		parseXRateLimitFamily(hs, now, qs, familyBase(groups, "x-rate-limit-"),
			fbHdrXRL2Limit, fbHdrXRL2Remaining, fbHdrXRL2Reset, fbHdrXRL2ResetAfter, fbHdrNone, fbHdrNone)
	}
	for i := range xrlDimensions {
		d := &xrlDimensions[i]
		remaining, ok := feedbackRemaining(hs.get(d.remaining))
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
	parseFamilyFeedback(groups, now, qs)
	parseShopifyCallLimit(hs, qs)
	parseSforceLimitInfo(hs, qs)
	return qs.n > 0
}

// parseXRateLimitFamily reads one single-quota family into qs and reports
// whether it found a valid remaining count. GitHub's X-RateLimit-Used gives
// the remaining count (limit - used) when X-RateLimit-Remaining is missing,
// and X-RateLimit-Resource ("core", "search"…) names the quota. A
// Reset-After (seconds from now, as Discord sends) is preferred to Reset,
// because it does not depend on the two clocks agreeing. usedH and
// resourceH are fbHdrNone for a family without them. The X-Rate-Limit-*
// spelling also takes its limit from a bare X-Rate-Limit, as Zendesk sends it.
//
// base is the family's other headers without dimension or window (nil for
// none): what the exact names do not say, it does — Strava's
// X-RateLimit-Usage, Datadog's X-RateLimit-Period, Mapbox's
// X-Rate-Limit-Interval, a reset in milliseconds. A limit listing several
// windows ("600,30000") with as many remaining or used counts is one quota
// per window (see addReadQuotas).
func parseXRateLimitFamily(hs *feedbackHeaders, now time.Time, qs *feedbackQuotas, base *familyGroup,
	limitH, remainingH, resetH, resetAfterH, usedH, resourceH feedbackHeader) bool {
	r := quotaReading{name: "requests", unit: "requests",
		limit: hs.get(limitH), remaining: hs.get(remainingH), used: hs.get(usedH)}
	if r.limit == nil && limitH == fbHdrXRL2Limit {
		r.limit = hs.get(fbHdrXRL2Bare)
	}
	r.resets = [3]resetSource{{hs.get(resetAfterH), famResetAfter}, {hs.get(resetH), famReset}}
	if base != nil {
		r.limit = orVals(r.limit, base.vals[famLimit])
		r.remaining = orVals(r.remaining, base.vals[famRemaining])
		r.used = orVals(r.used, base.vals[famUsed])
		if r.resets[0].vals == nil && r.resets[1].vals == nil {
			r.setResets(base)
		}
		r.window = base.window()
	}
	before := qs.n
	if !addReadQuotas(qs, &r, now) {
		return false
	}
	if resourceH != fbHdrNone {
		for _, v := range hs.get(resourceH) {
			if v = ascii.TrimOWS(v); v != "" && len(v) <= 64 {
				for i := before; i < qs.n; i++ {
					qs.q[i].Name = v
				}
				break
			}
		}
	}
	return true
}

// orVals returns a, or b when a is empty.
func orVals(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

// parseShopifyCallLimit reads Shopify's X-Shopify-Shop-Api-Call-Limit
// ("32/40": 32 calls used of a bucket of 40) as a requests quota. The bucket
// leaks continuously, so no reset is given.
func parseShopifyCallLimit(hs *feedbackHeaders, qs *feedbackQuotas) {
	for _, v := range hs.get(fbHdrShopifyCallLimit) {
		if used, limit, ok := parseUsedOfLimit(ascii.TrimOWS(v)); ok {
			qs.add(Quota{Name: "requests", Unit: "requests",
				Remaining: max(limit-used, 0), Limit: limit, Reset: -1}, true)
			return
		}
	}
}

// parseSforceLimitInfo reads Salesforce's Sforce-Limit-Info, a list of
// name=used/limit members, separated by ';' or ',', such as
// "api-usage=18/5000" and
// "per-app-api-usage=17/250(appName=sample-app)", one requests quota each
// (the parenthesized detail is dropped). The daily allocation rolls over 24
// hours, so no reset is given.
func parseSforceLimitInfo(hs *feedbackHeaders, qs *feedbackQuotas) {
	for _, line := range hs.get(fbHdrSforceLimitInfo) {
		for n := 0; line != "" && n < feedbackMaxListMembers; n++ {
			member := line // members are separated by ';' (as documented) or ','
			if i := strings.IndexAny(line, ",;"); i >= 0 {
				member, line = line[:i], line[i+1:]
			} else {
				line = ""
			}
			name, usage, ok := strings.Cut(member, "=")
			if !ok {
				continue
			}
			if i := strings.IndexByte(usage, '('); i >= 0 {
				usage = usage[:i]
			}
			name = ascii.TrimOWS(name)
			used, limit, ok := parseUsedOfLimit(ascii.TrimOWS(usage))
			if !ok || name == "" || len(name) > 64 {
				continue
			}
			qs.add(Quota{Name: name, Unit: "requests",
				Remaining: max(limit-used, 0), Limit: limit, Reset: -1}, true)
		}
	}
}

// parseUsedOfLimit reads "used/limit", two counts.
func parseUsedOfLimit(v string) (used, limit int, ok bool) {
	u, l, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	used, ok1 := num.ParseCount(u)
	limit, ok2 := num.ParseCount(l)
	return used, limit, ok1 && ok2
}

// feedbackMaxListMembers bounds the members read from one comma-separated
// line, so a hostile line costs one pass over its bytes.
const feedbackMaxListMembers = 32

// feedbackNextListMember splits a comma-separated line into its first member
// (without parameters after ';' and without white space) and the rest.
func feedbackNextListMember(line string) (member, rest string) {
	member, rest, _ = strings.Cut(line, ",")
	member, _, _ = strings.Cut(member, ";")
	return ascii.TrimOWS(member), rest
}

// feedbackFirstCount returns the first valid count among vals: the first
// member of the first line that holds a valid count ("100, 100;w=60" gives
// 100, as the older RateLimit-Limit draft writes it).
func feedbackFirstCount(vals []string) (int, bool) {
	for _, v := range vals {
		m, _ := feedbackNextListMember(v)
		if n, ok := num.ParseCount(m); ok {
			return n, true
		}
	}
	return 0, false
}

// feedbackRemaining returns the smallest valid count among every member of
// every line of a remaining-count header. A header sent twice reaches
// net/http as two lines, and a proxy may fold them into one ("991, 98");
// either way the conservative reading is the smaller count.
func feedbackRemaining(vals []string) (int, bool) {
	least, found := 0, false
	for _, line := range vals {
		for n := 0; line != "" && n < feedbackMaxListMembers; n++ {
			var m string
			m, line = feedbackNextListMember(line)
			if c, ok := num.ParseCount(m); ok && (!found || c < least) {
				least, found = c, true
			}
		}
	}
	return least, found
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
		if d, ok := parseResetAfter(v); ok {
			return d, true
		}
	}
	return 0, false
}

// parseResetAfter reads a reset-after value: a non-negative decimal number
// of seconds, or a Go-style duration.
func parseResetAfter(v string) (time.Duration, bool) {
	v = ascii.TrimOWS(v)
	if d, ok := num.ParseDuration(v, time.Second); ok {
		return d, true
	}
	return num.ParseGoDuration(v)
}

// parseFeedbackReset reads the time until a quota is restored, as seen at now:
//
//   - a bare non-negative number v (decimals allowed), told apart by its size
//     against now's Unix time n: v < n/2 is seconds from now (a delta is far
//     smaller than the epoch: under 27 years today), v < 500n (half of now in
//     milliseconds) a Unix time in seconds, anything larger a Unix time in
//     milliseconds. Measured against now rather than fixed thresholds, the
//     rule holds on any clock: testing/synctest's starts in 2000, where an
//     epoch reset is below 1e9;
//   - a Go-style duration ("6m0s", "1h2m3.5s", "20ms"), as OpenAI sends;
//   - an RFC 3339 time, as Anthropic sends, or an HTTP-date.
//
// A time in the past gives 0.
func parseFeedbackReset(v string, now time.Time) (time.Duration, bool) {
	v = ascii.TrimOWS(v)
	if d, ok := num.ParseDecimal(v); ok {
		deltaBelow, secondsBelow := epochScale(now)
		switch {
		case d.Int < deltaBelow:
			return d.Duration(time.Second), true
		case d.Int < secondsBelow:
			return feedbackUntilUnix(d.Int, d.Frac, now), true
		default:
			return feedbackUntilUnix(d.Int/1000, d.Int%1000*1e6+d.Frac/1000, now), true
		}
	}
	if d, ok := num.ParseGoDuration(v); ok {
		return d, true
	}
	if t, ok := httpdate.ParseRFC3339(v); ok {
		return max(t.Sub(now), 0), true
	}
	if t, ok := httpdate.Parse(v, now); ok {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// epochScale returns the bounds parseFeedbackReset tells a bare reset by: a
// value below deltaBelow is seconds from now, below secondsBelow a Unix time
// in seconds, else in milliseconds. A clock before 1977 (n < 2e8, such as the
// zero time) falls back to the fixed bounds 1e9 and 1e12.
func epochScale(now time.Time) (deltaBelow, secondsBelow uint64) {
	n := now.Unix()
	if n < 2e8 {
		return 1e9, 1e12
	}
	return uint64(n / 2), uint64(n) * 500
}

// feedbackUntilUnix returns the time from now until the Unix time sec.nsec,
// 0 when it has passed. sec is at most num.DecimalMax (about 4.6e18), far
// from where time.Unix would overflow, and Time.Sub saturates.
func feedbackUntilUnix(sec, nsec uint64, now time.Time) time.Duration {
	return max(time.Unix(int64(sec), int64(nsec)).Sub(now), 0)
}
