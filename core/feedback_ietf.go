package core

import (
	"math"
	"strings"
	"time"
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

// parseIETFFeedback reads level 2 of ParseFeedback into qs and reports whether
// it applies: the structured RateLimit field (draft-08 and later, with
// RateLimit-Policy), else its draft-07 dictionary form, else the older
// RateLimit-Limit, -Remaining and -Reset trio. A field that does not parse,
// or holds no item with a valid r, counts as absent.
func parseIETFFeedback(hs *feedbackHeaders, now time.Time, qs *feedbackQuotas) bool {
	if lines := hs.get(fbHdrRateLimit); len(lines) > 0 {
		var members [sfMaxMembers]sfMember
		var policies [sfMaxMembers]ietfPolicy
		np := parseIETFPolicies(hs.get(fbHdrRateLimitPolicy), &members, &policies)
		field := sfJoinLines(lines)
		if n, ok := parseSFList(field, &members); ok {
			if parseIETFItems(members[:n], policies[:np], qs) {
				return true
			}
		} else if n, ok := parseSFDict(field, &members); ok {
			if parseIETFDraft7(members[:n], policies[:np], qs) {
				return true
			}
		}
	}
	return parseIETFTrio(hs, now, qs)
}

// sfJoinLines joins the lines of a structured field with ", ", as RFC 8941
// section 4.2 says; a field sent on one line (the usual case) is used as is.
func sfJoinLines(lines []string) string {
	if len(lines) == 1 {
		return lines[0]
	}
	if len(lines) > sfMaxMembers {
		return "(" // more lines than members: malformed
	}
	return strings.Join(lines, ", ")
}

// parseIETFPolicies parses RateLimit-Policy into policies, using members as
// scratch space, and returns how many there are: 0 when the field is absent
// or malformed (the RateLimit items then stand alone).
func parseIETFPolicies(lines []string, members *[sfMaxMembers]sfMember, policies *[sfMaxMembers]ietfPolicy) int {
	if len(lines) == 0 {
		return 0
	}
	n, ok := parseSFList(sfJoinLines(lines), members)
	if !ok {
		return 0
	}
	np := 0
	for i := range n {
		m := &members[i]
		p := ietfPolicy{
			limit:  sfCount(m.params[sfParamQ]),
			window: sfSeconds(m.params[sfParamW], 0),
			unit:   ietfUnit(m.params[sfParamQU]),
			number: -1,
		}
		switch m.value.kind {
		case sfString, sfToken:
			p.name = m.value.raw
		case sfInteger:
			p.number = m.value.milli / 1000 // draft-07: the value is the quota
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
func parseIETFItems(items []sfMember, policies []ietfPolicy, qs *feedbackQuotas) bool {
	applied := false
	for i := range items {
		m := &items[i]
		if m.value.kind != sfString && m.value.kind != sfToken {
			continue
		}
		remaining := sfCount(m.params[sfParamR])
		if remaining < 0 {
			continue // r is required
		}
		q := Quota{
			Name:      sfUnescape(m.value.raw),
			Unit:      "requests",
			Remaining: remaining,
			Limit:     -1,
			Reset:     sfSeconds(m.params[sfParamT], -1),
		}
		for j := range policies {
			if p := &policies[j]; p.number < 0 && p.name == m.value.raw {
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
				Name: sfUnescape(p.name), Unit: p.unit,
				Remaining: -1, Limit: p.limit, Reset: -1, Window: p.window,
			}, false)
		}
	}
	return true
}

// parseIETFDraft7 reads the draft-07 form, a Dictionary such as
// `limit=100, remaining=0, reset=30` (with a policy such as `100;w=60`),
// as one requests quota. It applies when remaining is a valid count.
func parseIETFDraft7(members []sfMember, policies []ietfPolicy, qs *feedbackQuotas) bool {
	q := Quota{Name: "requests", Unit: "requests", Remaining: -1, Limit: -1, Reset: -1}
	for i := range members { // a repeated key: the last one wins, as RFC 8941 says
		switch m := &members[i]; m.key {
		case "limit":
			q.Limit = sfCount(m.value)
		case "remaining":
			q.Remaining = sfCount(m.value)
		case "reset":
			q.Reset = sfSeconds(m.value, -1)
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
	remaining, ok := feedbackFirstCount(hs.get(fbHdrRateLimitRemaining))
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
func ietfUnit(v sfValue) string {
	if v.kind != sfString && v.kind != sfToken {
		return "requests"
	}
	u := sfUnescape(v.raw)
	if feedbackEqualFold(u, "request") || feedbackEqualFold(u, "requests") {
		return "requests"
	}
	return u
}

// sfCount returns a non-negative Integer as an int (saturated), or -1 for
// anything else.
func sfCount(v sfValue) int {
	if v.kind != sfInteger || v.milli < 0 {
		return -1
	}
	return feedbackClampInt(v.milli / 1000)
}

// sfSeconds returns a non-negative Integer or Decimal number of seconds as a
// Duration (saturated), or unknown for anything else.
func sfSeconds(v sfValue, unknown time.Duration) time.Duration {
	if (v.kind != sfInteger && v.kind != sfDecimal) || v.milli < 0 {
		return unknown
	}
	if v.milli > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(v.milli) * time.Millisecond
}

// feedbackClampInt converts a non-negative int64 to int, saturating on 32-bit
// platforms.
func feedbackClampInt(n int64) int {
	if uint64(n) > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}
