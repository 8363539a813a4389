package ratelimit

import (
	"math"
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
	"github.com/headgate-go/headgate/core/internal/sf"
)

// ietfPolicy is one member of RateLimit-Policy, reduced to what the RateLimit
// items are matched against.
type ietfPolicy struct {
	name   string        // raw (escaped) name; "" for a draft-07 numeric policy
	limit  int           // q; -1 when missing or invalid
	window time.Duration // w; 0 when missing or invalid
	unit   string        // normalized qu: "requests" when missing
	used   bool          // matched by a RateLimit item
	number int64         // the member's value in a draft-07 policy (10;w=1); -1 otherwise
}

// parseIETFFeedback reads level 2 of Parse into qs and reports whether
// it applies: the structured RateLimit field (draft-08 and later, with
// RateLimit-Policy), else its draft-07 dictionary form, else the older
// RateLimit-Limit, -Remaining and -Reset trio. A field that does not parse,
// or holds no item with a valid r, counts as absent.
func parseIETFFeedback(hs *feedbackHeaders, now time.Time, qs *feedbackQuotas) bool {
	return parseIETFFields(hs.get(fbHdrRateLimit), hs.get(fbHdrRateLimitPolicy), qs) ||
		parseIETFTrio(hs, now, qs)
}

// parseIETFFields reads the lines of a RateLimit field and of its
// RateLimit-Policy field (under whatever names a provider sends them, such
// as Atlassian's Beta-RateLimit) into qs and reports whether they applied.
func parseIETFFields(lines, policyLines []string, qs *feedbackQuotas) bool {
	if len(lines) == 0 {
		return false
	}
	var members [sf.MaxMembers]sf.Member
	var policies [sf.MaxMembers]ietfPolicy
	np := parseIETFPolicies(policyLines, &members, &policies)
	field := sf.JoinLines(lines)
	if n, ok := sf.ParseList(field, &members); ok {
		return parseIETFItems(members[:n], policies[:np], qs)
	}
	if n, ok := sf.ParseDict(field, &members); ok {
		return parseIETFDraft7(members[:n], policies[:np], qs)
	}
	return false
}

// parseIETFPolicies parses RateLimit-Policy into policies, using members as
// scratch space, and returns how many there are: 0 when the field is absent
// or malformed (the RateLimit items then stand alone).
func parseIETFPolicies(lines []string, members *[sf.MaxMembers]sf.Member, policies *[sf.MaxMembers]ietfPolicy) int {
	if len(lines) == 0 {
		return 0
	}
	n, ok := sf.ParseList(sf.JoinLines(lines), members)
	if !ok {
		return 0
	}
	np := 0
	for i := range n {
		m := &members[i]
		p := ietfPolicy{
			limit:  sfCount(m.Params[sf.ParamQ]),
			window: sfSeconds(m.Params[sf.ParamW], 0),
			unit:   ietfUnit(m.Params[sf.ParamQU]),
			number: -1,
		}
		switch m.Value.Kind {
		case sf.String, sf.Token:
			p.name = m.Value.Raw
		case sf.Integer:
			p.number = m.Value.Milli / 1000 // draft-07: the value is the quota
		default:
			continue
		}
		policies[np] = p
		np++
	}
	return np
}

// parseIETFItems reads the RateLimit items (draft-08 and later) into qs:
// each item names a policy and carries r (remaining, required) and t (seconds
// until reset). An item whose policy is not listed counts requests. Policies
// no item named are listed after the items, with Remaining and Reset unknown.
func parseIETFItems(items []sf.Member, policies []ietfPolicy, qs *feedbackQuotas) bool {
	applied := false
	for i := range items {
		m := &items[i]
		if m.Value.Kind != sf.String && m.Value.Kind != sf.Token {
			continue
		}
		remaining := sfCount(m.Params[sf.ParamR])
		if remaining < 0 {
			continue // r is required
		}
		q := Quota{
			Name:      sf.Unescape(m.Value.Raw),
			Unit:      "requests",
			Remaining: remaining,
			Limit:     -1,
			Reset:     sfSeconds(m.Params[sf.ParamT], -1),
		}
		for j := range policies {
			if p := &policies[j]; p.number < 0 && p.name == m.Value.Raw {
				q.Unit, q.Limit, q.Window = p.unit, p.limit, p.window
				p.used = true
				break
			}
		}
		qs.add(q, q.Unit == "requests")
		applied = true
	}
	if !applied {
		return false
	}
	for j := range policies {
		if p := &policies[j]; !p.used && p.number < 0 {
			qs.add(Quota{
				Name: sf.Unescape(p.name), Unit: p.unit,
				Remaining: -1, Limit: p.limit, Reset: -1, Window: p.window,
			}, false)
		}
	}
	return true
}

// parseIETFDraft7 reads the draft-07 form, a Dictionary such as
// `limit=100, remaining=0, reset=30` (with a policy such as `100;w=60`),
// as one requests quota. It applies when remaining is a valid count.
func parseIETFDraft7(members []sf.Member, policies []ietfPolicy, qs *feedbackQuotas) bool {
	q := Quota{Name: "requests", Unit: "requests", Remaining: -1, Limit: -1, Reset: -1}
	for i := range members { // a repeated key: the last one wins, as RFC 8941 says
		switch m := &members[i]; m.Key {
		case "limit":
			q.Limit = sfCount(m.Value)
		case "remaining":
			q.Remaining = sfCount(m.Value)
		case "reset":
			q.Reset = sfSeconds(m.Value, -1)
		}
	}
	if q.Remaining < 0 {
		return false
	}
	for j := range policies {
		if p := &policies[j]; p.number >= 0 && q.Limit >= 0 && p.number == int64(q.Limit) {
			q.Window = p.window
			break
		}
	}
	qs.add(q, true)
	return true
}

// parseIETFTrio reads the older draft headers RateLimit-Limit (the first
// number of a list such as "100, 100;w=60"), RateLimit-Remaining and
// RateLimit-Reset (seconds; a Unix time, as GitLab sends, is told apart by
// size as for X-RateLimit-Reset). It applies when Remaining is valid.
func parseIETFTrio(hs *feedbackHeaders, now time.Time, qs *feedbackQuotas) bool {
	remaining, ok := feedbackRemaining(hs.get(fbHdrRateLimitRemaining))
	if !ok {
		return false
	}
	q := Quota{Name: "requests", Unit: "requests", Remaining: remaining, Limit: -1, Reset: -1}
	if limit, ok := feedbackFirstCount(hs.get(fbHdrRateLimitLimit)); ok {
		q.Limit = limit
	}
	if reset, ok := feedbackFirstReset(hs.get(fbHdrRateLimitReset), now); ok {
		q.Reset = reset
	}
	qs.add(q, true)
	return true
}

// ietfUnit normalizes a qu parameter: missing, "request" or "requests" (any
// case) is "requests"; another String or Token ("content-bytes",
// "concurrency") is kept. A qu of another type is read as missing.
func ietfUnit(v sf.Value) string {
	if v.Kind != sf.String && v.Kind != sf.Token {
		return "requests"
	}
	u := sf.Unescape(v.Raw)
	if ascii.EqualFold(u, "request") || ascii.EqualFold(u, "requests") {
		return "requests"
	}
	return u
}

// sfCount returns a non-negative Integer as an int (saturated), or -1 for
// anything else.
func sfCount(v sf.Value) int {
	if v.Kind != sf.Integer || v.Milli < 0 {
		return -1
	}
	return feedbackClampInt(v.Milli / 1000)
}

// sfSeconds returns a non-negative Integer or Decimal number of seconds as a
// Duration (saturated), or unknown for anything else.
func sfSeconds(v sf.Value, unknown time.Duration) time.Duration {
	if (v.Kind != sf.Integer && v.Kind != sf.Decimal) || v.Milli < 0 {
		return unknown
	}
	if v.Milli > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(v.Milli) * time.Millisecond
}

// feedbackClampInt converts a non-negative int64 to int, saturating on 32-bit
// platforms.
func feedbackClampInt(n int64) int {
	if uint64(n) > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}
