package ratelimit

import (
	"bytes"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
	"github.com/headgate-go/headgate/core/internal/num"
)

// profileSpecs holds what each Profile reads. The documented behaviour each
// one follows is cited beside its cases in profiles_test.go.
var profileSpecs = [profileCount]profileSpec{
	GitHub:     {name: "github", body: bodyOnStatus(512, http.StatusForbidden, http.StatusTooManyRequests)},
	Atlassian:  {name: "atlassian"},
	HubSpot:    {name: "hubspot"},
	Zendesk:    {name: "zendesk"},
	Bybit:      {name: "bybit", body: bodyBybit},
	Shopify:    {name: "shopify", body: bodyShopify},
	Salesforce: {name: "salesforce", body: bodyOnStatus(512, http.StatusForbidden)},
	Discord:    {name: "discord", body: bodyOnStatus(512, http.StatusTooManyRequests)},
	OpenAI:     {name: "openai", body: bodyOnStatus(1024, http.StatusTooManyRequests)},
	Anthropic:  {name: "anthropic"},
	GoogleMaps: {name: "googlemaps", body: bodyGoogleMaps},
	Prisjakt:   {name: "prisjakt"},
}

// addQuotas adds to qs the quotas only p's provider's headers report, and
// returns the family that decided when the generic headers said nothing
// (FromNone when it added nothing).
func (p Profile) addQuotas(h http.Header, now time.Time, qs *feedbackQuotas) Source {
	switch p {
	case Atlassian:
		return quotasAtlassian(h, qs)
	case HubSpot:
		return quotasHubSpot(h, qs)
	case Zendesk:
		return quotasZendesk(h, qs)
	case Bybit:
		return quotasBybit(h, now, qs)
	case Anthropic:
		return quotasAnthropic(h, now, qs)
	}
	return FromNone
}

// refine adjusts fb, once the quotas decided, as p reads the status, the
// header and the body prefix (nil when none was read). fb.Pause stays >= 0.
func (p Profile) refine(status int, h http.Header, body []byte, now time.Time, fb *Feedback) {
	switch p {
	case GitHub:
		refineGitHub(status, body, fb)
	case Bybit:
		refineBybit(status, body, fb)
	case Shopify:
		refineShopify(body, fb)
	case Salesforce:
		refineSalesforce(status, body, fb)
	case Discord:
		refineDiscord(status, h, body, fb)
	case OpenAI:
		refineOpenAI(status, body, fb)
	case Anthropic:
		refineAnthropic(status, h, now, fb)
	case GoogleMaps:
		refineGoogleMaps(status, body, fb)
	case Prisjakt:
		refinePrisjakt(h, fb)
	}
}

// bodyOnStatus asks for n bytes of the body on the given statuses only.
func bodyOnStatus(n int, statuses ...int) func(int, http.Header) int {
	return func(status int, _ http.Header) int {
		for _, s := range statuses {
			if status == s {
				return n
			}
		}
		return 0
	}
}

// GitHub: a secondary rate limit is a 403 or 429 whose body says so, often
// with quota left. Without a retry-after, and with x-ratelimit-remaining
// above 0 (both read generically), GitHub asks for a wait of at least one
// minute.
func refineGitHub(status int, body []byte, fb *Feedback) {
	if (status != http.StatusForbidden && status != http.StatusTooManyRequests) ||
		!ascii.ContainsFold(string(body), "secondary rate limit") {
		return
	}
	fb.Exhausted = true
	if fb.Pause == 0 {
		fb.Pause = time.Minute
	}
}

// Atlassian: Jira and Confluence Cloud send their points quota in the IETF
// syntax under vendor names (Beta-RateLimit, Beta-RateLimit-Policy), beside
// per-second X-RateLimit-* headers read generically.
func quotasAtlassian(h http.Header, qs *feedbackQuotas) Source {
	if parseIETFFields(profileHeader(h, "Beta-Ratelimit"), profileHeader(h, "Beta-Ratelimit-Policy"), qs) {
		return FromRateLimit
	}
	return FromNone
}

// HubSpot: a rolling window (X-HubSpot-RateLimit-Max, -Remaining and
// -Interval-Milliseconds), a per-second one (-Secondly, -Secondly-Remaining)
// and a daily one (-Daily, -Daily-Remaining; it turns at the account's
// midnight, so its reset is unknown). A rolling window returns what was
// spent within one window, which is its reset.
func quotasHubSpot(h http.Header, qs *feedbackQuotas) Source {
	before := qs.n
	interval := time.Duration(-1)
	if ms, ok := profileHeaderCount(h, "X-Hubspot-Ratelimit-Interval-Milliseconds"); ok {
		interval = time.Duration(min(ms, math.MaxInt64/int(time.Millisecond))) * time.Millisecond
	}
	profileAddQuota(h, qs, "interval", "X-Hubspot-Ratelimit-Max", "X-Hubspot-Ratelimit-Remaining", interval)
	profileAddQuota(h, qs, "secondly", "X-Hubspot-Ratelimit-Secondly", "X-Hubspot-Ratelimit-Secondly-Remaining", time.Second)
	profileAddQuota(h, qs, "daily", "X-Hubspot-Ratelimit-Daily", "X-Hubspot-Ratelimit-Daily-Remaining", -1)
	if qs.n > before {
		return FromXRateLimit
	}
	return FromNone
}

// profileHeaderCount reads the first valid count of header canon.
func profileHeaderCount(h http.Header, canon string) (int, bool) {
	return feedbackFirstCount(profileHeader(h, canon))
}

// profileAddQuota adds a requests quota from a limit and a remaining header
// when the remaining count is valid. window is both the quota's window and
// its reset (-1: unknown).
func profileAddQuota(h http.Header, qs *feedbackQuotas, name, limitH, remainingH string, window time.Duration) {
	remaining, ok := feedbackRemaining(profileHeader(h, remainingH))
	if !ok {
		return
	}
	q := Quota{Name: name, Unit: "requests", Remaining: remaining, Limit: -1, Reset: window, Window: max(window, 0)}
	if limit, ok := profileHeaderCount(h, limitH); ok {
		q.Limit = limit
	}
	qs.add(q, true)
}

// Zendesk: endpoint quotas come as Zendesk-RateLimit-<endpoint> headers
// holding "total=100; remaining=99; resets=41" (resets in seconds); the
// account-wide X-Rate-Limit and ratelimit-* headers are read generically.
func quotasZendesk(h http.Header, qs *feedbackQuotas) Source {
	const prefix = "zendesk-ratelimit-"
	// The endpoints, in name order, so the result does not depend on the
	// map's order; past zendeskMaxEndpoints the names that sort last drop.
	var names [zendeskMaxEndpoints]string
	var vals [zendeskMaxEndpoints]string
	n := 0
	for k, vs := range h {
		if len(k) <= len(prefix) || len(k) > 64 || !ascii.EqualFold(k[:len(prefix)], prefix) || len(vs) == 0 {
			continue
		}
		name := strings.ToLower(k[len(prefix):])
		i := n
		for i > 0 && names[i-1] > name {
			i--
		}
		if i == len(names) {
			continue
		}
		last := min(n, len(names)-1)
		copy(names[i+1:last+1], names[i:last])
		copy(vals[i+1:last+1], vals[i:last])
		names[i], vals[i] = name, vs[0]
		n = min(n+1, len(names))
	}
	before := qs.n
	for i := range n {
		q := Quota{Name: names[i], Unit: "requests", Remaining: -1, Limit: -1, Reset: -1}
		rest := vals[i]
		for m := 0; rest != "" && m < feedbackMaxListMembers; m++ {
			var member string
			member, rest, _ = strings.Cut(rest, ";")
			key, val, _ := strings.Cut(member, "=")
			c, ok := num.ParseCount(val)
			if !ok {
				continue
			}
			switch strings.ToLower(ascii.TrimOWS(key)) {
			case "total":
				q.Limit = c
			case "remaining":
				q.Remaining = c
			case "resets":
				q.Reset = time.Duration(min(c, math.MaxInt64/int(time.Second))) * time.Second
			}
		}
		if q.Remaining >= 0 {
			qs.add(q, true)
		}
	}
	if qs.n > before {
		return FromXRateLimit
	}
	return FromNone
}

// zendeskMaxEndpoints bounds the Zendesk-RateLimit-<endpoint> headers read.
const zendeskMaxEndpoints = 8

// Bybit: X-Bapi-Limit-Status is what remains of X-Bapi-Limit, per second,
// for the endpoint; X-Bapi-Limit-Reset-Timestamp (Unix milliseconds) is
// when it returns. A refusal comes as a 200 whose body carries retCode
// 10006 ("Too many visits!") or 10018 (the IP's limit); a 403 "access too
// frequent" bans the IP for at least ten minutes.
func bodyBybit(status int, h http.Header) int {
	if status == http.StatusForbidden || status == http.StatusOK && profileIsJSON(h) {
		return 256
	}
	return 0
}

func quotasBybit(h http.Header, now time.Time, qs *feedbackQuotas) Source {
	remaining, ok := feedbackRemaining(profileHeader(h, "X-Bapi-Limit-Status"))
	if !ok {
		return FromNone
	}
	q := Quota{Name: "requests", Unit: "requests", Remaining: remaining, Limit: -1, Reset: -1, Window: time.Second}
	if limit, ok := profileHeaderCount(h, "X-Bapi-Limit"); ok {
		q.Limit = limit
	}
	if reset, ok := feedbackFirstReset(profileHeader(h, "X-Bapi-Limit-Reset-Timestamp"), now); ok {
		q.Reset = reset
	}
	qs.add(q, true)
	return FromXRateLimit
}

func refineBybit(status int, body []byte, fb *Feedback) {
	switch {
	case status == http.StatusForbidden && bytes.Contains(body, []byte("too frequent")):
		fb.Exhausted = true
		fb.Pause = max(fb.Pause, 10*time.Minute)
	case status == http.StatusOK:
		code, ok := jsonValue(body, "retCode")
		if !ok || (code != "10006" && code != "10018") {
			return
		}
		fb.Exhausted = true
		if fb.Pause == 0 {
			fb.Pause = time.Second // the window is one rolling second
			if fb.Reset > 0 {
				fb.Pause = fb.Reset
			}
		}
	}
}

// Shopify: the REST call limit and its Retry-After are read generically.
// The GraphQL Admin API refuses with errors[].extensions.code THROTTLED,
// and reports its cost bucket in extensions.cost.throttleStatus
// (currentlyAvailable of maximumAvailable points, refilled at restoreRate
// per second); a refused query can run once the bucket holds its
// requestedQueryCost.
func bodyShopify(status int, h http.Header) int {
	if (status == http.StatusOK || status == http.StatusTooManyRequests) && profileIsJSON(h) {
		return 1024
	}
	return 0
}

func refineShopify(body []byte, fb *Feedback) {
	if !bytes.Contains(body, []byte(`"THROTTLED"`)) {
		return
	}
	fb.Exhausted = true
	avail, ok1 := jsonNumber(body, "currentlyAvailable")
	maxAvail, ok2 := jsonNumber(body, "maximumAvailable")
	rate, ok3 := jsonNumber(body, "restoreRate")
	perSec := decimalFloat(rate)
	if !ok1 || !ok2 || !ok3 || perSec <= 0 {
		return
	}
	q := Quota{Name: "graphql-cost", Unit: "cost-points",
		Remaining: clampCount(avail.Int), Limit: clampCount(maxAvail.Int)}
	q.Reset = secondsDuration(float64(max(q.Limit-q.Remaining, 0)) / perSec)
	fb.Quotas = append(fb.Quotas, q)
	if fb.Pause == 0 {
		need := decimalFloat(avail) + 1 // unknown cost: one point more than there is
		if n, ok := jsonNumber(body, "requestedQueryCost"); ok {
			need = decimalFloat(n)
		}
		fb.Pause = secondsDuration(max(need-decimalFloat(avail), 1) / perSec)
	}
}

// Salesforce: the org's and the connected app's 24-hour allocations are read
// generically from Sforce-Limit-Info. A call past the allocation is refused
// with a 403 whose body says REQUEST_LIMIT_EXCEEDED; the allocation rolls
// over 24 hours, so no reset is known and the refusal names no pause.
func refineSalesforce(status int, body []byte, fb *Feedback) {
	if status == http.StatusForbidden && bytes.Contains(body, []byte("REQUEST_LIMIT_EXCEEDED")) {
		fb.Exhausted = true
	}
}

// Discord: X-RateLimit-* (with Reset-After) and Retry-After are read
// generically. A 429 names its scope in X-RateLimit-Scope ("user",
// "global" or "shared"; X-RateLimit-Global: true for the global limit) and
// carries retry_after, in seconds with decimals, in its JSON body, which
// gives the pause when no header did. The refused scope is listed as a
// spent quota named "scope:<scope>".
func refineDiscord(status int, h http.Header, body []byte, fb *Feedback) {
	if status != http.StatusTooManyRequests {
		return
	}
	if fb.Source != FromRetryAfter {
		if d, ok := jsonSeconds(body, "retry_after"); ok {
			fb.Pause = max(fb.Pause, d)
		}
	}
	scope := "user"
	switch {
	case profileHeaderIs(h, "X-Ratelimit-Global", "true"), profileHeaderIs(h, "X-Ratelimit-Scope", "global"):
		scope = "global"
	case profileHeaderIs(h, "X-Ratelimit-Scope", "shared"):
		scope = "shared"
	}
	fb.Quotas = append(fb.Quotas, Quota{Name: "scope:" + scope, Unit: "requests",
		Remaining: 0, Limit: -1, Reset: fb.Pause})
}

// OpenAI: the x-ratelimit-*-requests and -tokens dimensions are read
// generically. A 429 says in its body which limit refused it: code
// rate_limit_exceeded with a message ending "Please try again in 1.8s"
// (the pause, when no header gave one), or insufficient_quota, a spent
// billing quota that no wait restores: it is Exhausted with no pause, and
// listed as a spent "billing" quota.
func refineOpenAI(status int, body []byte, fb *Feedback) {
	if status != http.StatusTooManyRequests {
		return
	}
	if code, _ := jsonValue(body, "code"); code == "insufficient_quota" {
		fb.Pause = 0
		fb.Quotas = append(fb.Quotas, Quota{Name: "billing", Unit: "credits", Remaining: 0, Limit: -1, Reset: -1})
		return
	}
	const marker = "try again in "
	i := bytes.Index(body, []byte(marker))
	if fb.Pause > 0 || i < 0 {
		return
	}
	v := body[i+len(marker):]
	j := 0
	for j < len(v) && j < 32 && (ascii.IsDigit(v[j]) || v[j] == '.' || ascii.IsAlpha(v[j])) {
		j++
	}
	if d, ok := num.ParseGoDuration(strings.TrimSuffix(string(v[:j]), ".")); ok {
		fb.Pause = d
	}
}

// Anthropic: the anthropic-ratelimit-* dimensions and retry-after are read
// generically. Priority Tier adds anthropic-priority-input-tokens-* and
// anthropic-priority-output-tokens-* quotas. A 529 overloaded_error is the
// API's overload, not the caller's quota (so not Exhausted, as for any
// status but 429 and 503), but its retry-after, when sent, is the pause.
func quotasAnthropic(h http.Header, now time.Time, qs *feedbackQuotas) Source {
	before := qs.n
	for _, d := range [...]struct{ name, limit, remaining, reset string }{
		{"priority-input-tokens", "Anthropic-Priority-Input-Tokens-Limit",
			"Anthropic-Priority-Input-Tokens-Remaining", "Anthropic-Priority-Input-Tokens-Reset"},
		{"priority-output-tokens", "Anthropic-Priority-Output-Tokens-Limit",
			"Anthropic-Priority-Output-Tokens-Remaining", "Anthropic-Priority-Output-Tokens-Reset"},
	} {
		remaining, ok := feedbackRemaining(profileHeader(h, d.remaining))
		if !ok {
			continue
		}
		q := Quota{Name: d.name, Unit: "tokens", Remaining: remaining, Limit: -1, Reset: -1}
		if limit, ok := profileHeaderCount(h, d.limit); ok {
			q.Limit = limit
		}
		if reset, ok := feedbackFirstReset(profileHeader(h, d.reset), now); ok {
			q.Reset = reset
		}
		qs.add(q, true)
	}
	if qs.n > before {
		return FromXRateLimit
	}
	return FromNone
}

// statusOverloaded is Anthropic's 529.
const statusOverloaded = 529

func refineAnthropic(status int, h http.Header, now time.Time, fb *Feedback) {
	if status != statusOverloaded {
		return
	}
	for _, v := range profileHeader(h, "Retry-After") {
		if d, ok := parseRetryAfter(v, now); ok {
			fb.Pause = max(fb.Pause, d)
			fb.Source = FromRetryAfter
		}
	}
}

// Google Maps Platform web services answer a request over the quota with a
// 200 whose JSON body says "status": "OVER_QUERY_LIMIT" (and, when the
// excess persists, a 403). No wait is named: it is a refusal, and adaptive
// throttling slows down.
func bodyGoogleMaps(status int, h http.Header) int {
	if status == http.StatusOK && profileIsJSON(h) {
		return 512
	}
	return 0
}

func refineGoogleMaps(status int, body []byte, fb *Feedback) {
	if v, ok := jsonValue(body, "status"); status == http.StatusOK && ok && v == "OVER_QUERY_LIMIT" {
		fb.Exhausted = true
	}
}

// Prisjakt sends X-Rate-Limit-Reset as milliseconds from now ("600000" is
// ten minutes), which the generic reader, by the size rule, reads as
// seconds. The profile puts every reset and pause taken from it right.
func refinePrisjakt(h http.Header, fb *Feedback) {
	vs := profileHeader(h, "X-Rate-Limit-Reset")
	if len(vs) == 0 || profileHeader(h, "X-Rate-Limit-Reset-After") != nil {
		return // (Reset-After, when sent, is what the generic reader used)
	}
	d, ok := num.ParseDecimal(ascii.TrimOWS(vs[0]))
	if !ok || d.Int >= 1e9 {
		return
	}
	wrong, right := d.Duration(time.Second), d.Duration(time.Millisecond)
	for i := range fb.Quotas {
		if fb.Quotas[i].Reset == wrong {
			fb.Quotas[i].Reset = right
		}
	}
	if fb.Reset == wrong {
		fb.Reset = right
	}
	if fb.Pause == wrong && fb.Source != FromRetryAfter {
		fb.Pause = right
	}
}

// decimalFloat returns d as a float64.
func decimalFloat(d num.Decimal) float64 { return float64(d.Int) + float64(d.Frac)/1e9 }

// clampCount returns n as an int, saturated.
func clampCount(n uint64) int { return int(min(n, math.MaxInt)) }

// secondsDuration returns f seconds as a Duration rounded up, 0 for f <= 0
// or NaN, saturated for huge f.
func secondsDuration(f float64) time.Duration {
	switch ns := math.Ceil(f * 1e9); {
	case !(ns > 0):
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	default:
		return time.Duration(ns)
	}
}
