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

// Atlassian: Jira and Confluence Cloud send their points quota in the IETF
// syntax under vendor names (Beta-RateLimit, Beta-RateLimit-Policy), beside
// per-second X-RateLimit-* headers read generically.
func quotasAtlassian(h http.Header, qs *feedbackQuotas) Source {
	if parseIETFFields(profileHeader(h, "Beta-Ratelimit"), profileHeader(h, "Beta-Ratelimit-Policy"), qs) {
		return FromRateLimit
	}
	return FromNone
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

// Shopify: the REST call limit and its Retry-After are read generically.
// The GraphQL Admin API refuses with errors[].extensions.code THROTTLED,
// and reports its cost bucket in extensions.cost.throttleStatus
// (currentlyAvailable of maximumAvailable points, refilled at restoreRate
// per second); a refused query can run once the bucket holds its
// requestedQueryCost.
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

// Discord: X-RateLimit-* (with Reset-After) and Retry-After are read
// generically, the body's retry_after by the profile's signal. A 429 names
// its scope in X-RateLimit-Scope ("user", "global" or "shared";
// X-RateLimit-Global: true for the global limit): the refused scope is
// listed as a spent quota named "scope:<scope>", whose reset is the pause.
func refineDiscord(status int, h http.Header, fb *Feedback) {
	if status != http.StatusTooManyRequests {
		return
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
