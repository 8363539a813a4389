package ratelimit

import (
	"bytes"
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
	"github.com/headgate-go/headgate/core/internal/num"
)

// A Profile reads what one provider says about its quota beyond what Parse
// reads generically: headers under the provider's own names, flags that
// change what a status means, and signals only the response body carries
// (GitHub's secondary limits, Bybit's retCode, Discord's retry_after). A
// profile never replaces the generic reading: it adds its quotas to the
// generic ones, and then refines the result.
//
// A profile reads the body only when it asks for it (BodyPrefix), for the
// responses it names (refusals, and JSON answers of APIs that refuse with a
// 200), and then only a bounded prefix (at most 4 KiB). Streams (Server-Sent
// Events) are never read. A headgate budget built with WithProfile reads
// every response with its profile, and its Transport reads that prefix
// before it hands the response on, then serves it again, so the caller reads
// the whole body as sent.
//
// A profile is described by a Spec: NewProfile builds one from a Spec
// written in Go, LoadProfile from JSON. The built-in profiles (GitHub,
// OpenAI…) are Specs too, some with code for what no Spec says. The zero
// value, NoProfile, is the generic reading alone. A Profile is immutable and
// safe for concurrent use; profiles compare equal only to themselves.
type Profile struct {
	p *profile
}

// NoProfile reads the generic headers only.
var NoProfile Profile

// profileMaxBody bounds the body prefix any profile may ask for.
const profileMaxBody = 4 << 10

// profileMaxExtraQuotas bounds the quotas a profile's refine step appends
// to Feedback.Quotas (its quotas step adds to the bounded set the generic
// reader fills).
const profileMaxExtraQuotas = 1

// String returns the profile's name ("none", "github", "atlassian"…).
func (p Profile) String() string {
	if p.p == nil {
		return "none"
	}
	return p.p.spec.Name
}

// Spec returns a copy of the Spec p was built from: the declarative part of
// a built-in profile (its code for what no Spec says is not in it), and the
// zero Spec for NoProfile.
func (p Profile) Spec() Spec {
	if p.p == nil {
		return Spec{}
	}
	return cloneSpec(p.p.spec)
}

// Parse reads a response as the package-level Parse does and then as the
// profile reads it. body is the start of the response body (nil when not at
// hand; BodyPrefix says how much the profile wants). Like Parse it is pure
// and reports the pause uncapped.
func (p Profile) Parse(status int, h http.Header, body []byte, now time.Time) Feedback {
	return parse(status, h, body, now, p.p)
}

// BodyPrefix returns how many leading bytes of the body the profile reads
// for a response with this status and header: 0 when it reads none (always
// for NoProfile, and for every Server-Sent Events stream), at most 4096.
func (p Profile) BodyPrefix(status int, h http.Header) int {
	if p.p == nil || profileIsStream(h) {
		return 0
	}
	return p.p.bodyPrefix(status, h)
}

// profileHeader returns the values of the header with the canonical name
// canon: h[canon], or else the values of a key equal to it in any case (a
// map built by hand).
func profileHeader(h http.Header, canon string) []string {
	if vs, ok := h[canon]; ok {
		return vs
	}
	for k, vs := range h {
		if len(k) == len(canon) && ascii.EqualFold(k, canon) {
			return vs
		}
	}
	return nil
}

// profileHeaderIs reports whether the first value of the header canon equals
// want in any case.
func profileHeaderIs(h http.Header, canon, want string) bool {
	vs := profileHeader(h, canon)
	return len(vs) > 0 && ascii.EqualFold(ascii.TrimOWS(vs[0]), want)
}

// profileIsJSON reports whether the response says its body is JSON.
func profileIsJSON(h http.Header) bool {
	vs := profileHeader(h, "Content-Type")
	return len(vs) > 0 && ascii.ContainsFold(vs[0], "json")
}

// profileIsStream reports whether the response is a Server-Sent Events
// stream, whose body a profile must never wait for.
func profileIsStream(h http.Header) bool {
	vs := profileHeader(h, "Content-Type")
	return len(vs) > 0 && ascii.ContainsFold(vs[0], "text/event-stream")
}

// jsonValue returns the raw text of the first value whose member name is key
// in a JSON text (possibly cut short): a number, true, false, or a string's
// contents without its quotes (escapes left as they are). It is a scanner
// for a bounded prefix, not a JSON parser: it finds `"key"`, then a colon,
// then reads the value; ok is false when the value is missing or cut off.
func jsonValue(body []byte, key string) (string, bool) {
	for i := 0; i < len(body); {
		j := bytes.Index(body[i:], []byte(key))
		if j < 0 {
			return "", false
		}
		start, end := i+j, i+j+len(key)
		i = end
		if start == 0 || body[start-1] != '"' || end >= len(body) || body[end] != '"' {
			continue
		}
		k := end + 1
		for k < len(body) && (body[k] == ' ' || body[k] == '\t' || body[k] == '\n' || body[k] == '\r') {
			k++
		}
		if k == len(body) || body[k] != ':' {
			continue
		}
		k++
		for k < len(body) && (body[k] == ' ' || body[k] == '\t' || body[k] == '\n' || body[k] == '\r') {
			k++
		}
		if k < len(body) && body[k] == '"' {
			for m := k + 1; m < len(body); m++ {
				switch body[m] {
				case '\\':
					m++
				case '"':
					return string(body[k+1 : m]), true
				}
			}
			return "", false
		}
		m := k
		for m < len(body) && body[m] != ',' && body[m] != '}' && body[m] != ']' &&
			body[m] != ' ' && body[m] != '\n' && body[m] != '\r' && body[m] != '\t' {
			m++
		}
		if m == k || m == len(body) {
			return "", false // empty, or cut off by the prefix's end
		}
		return string(body[k:m]), true
	}
	return "", false
}

// jsonNumber reads the member key as a non-negative decimal number.
func jsonNumber(body []byte, key string) (num.Decimal, bool) {
	v, ok := jsonValue(body, key)
	if !ok {
		return num.Decimal{}, false
	}
	return num.ParseDecimal(v)
}
