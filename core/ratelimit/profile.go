package ratelimit

import (
	"bytes"
	"net/http"
	"strconv"
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
// The zero value, NoProfile, is the generic reading alone. The package doc
// lists what each profile reads. The set is closed: a provider not listed is
// read generically.
type Profile uint8

const (
	// NoProfile reads the generic headers only.
	NoProfile Profile = iota
	// GitHub adds GitHub's secondary rate limits.
	GitHub
	// Atlassian adds Jira's and Confluence's Beta-RateLimit fields.
	Atlassian
	// HubSpot adds the X-HubSpot-RateLimit-* windows.
	HubSpot
	// Zendesk adds the Zendesk-RateLimit-* endpoint quotas.
	Zendesk
	// Bybit adds the X-Bapi-Limit-* headers and the body's retCode.
	Bybit
	// Shopify adds the GraphQL Admin API's throttle status.
	Shopify
	// Salesforce adds the REQUEST_LIMIT_EXCEEDED refusal.
	Salesforce
	// Discord adds the rate limit's scope and the body's retry_after.
	Discord
	// OpenAI adds the body's "try again in" and insufficient_quota.
	OpenAI
	// Anthropic adds the Priority Tier quotas and the 529 overload.
	Anthropic
	// GoogleMaps adds the OVER_QUERY_LIMIT status of a 200's body.
	GoogleMaps
	// Prisjakt reads X-Rate-Limit-Reset as milliseconds from now.
	Prisjakt

	profileCount
)

// profileMaxBody bounds the body prefix any profile may ask for.
const profileMaxBody = 4 << 10

// profileMaxExtraQuotas bounds the quotas a profile's refine step appends
// to Feedback.Quotas (its quotas step adds to the bounded set the generic
// reader fills).
const profileMaxExtraQuotas = 1

// profileSpec is what a profile reads: its name, which bodies it reads, and
// (through the switches in Profile.addQuotas and Profile.refine, in
// profiles.go) what it adds to the generic reading.
type profileSpec struct {
	name string
	// body returns how many leading bytes of the body the profile reads for
	// a response with this status and header (at most profileMaxBody); 0
	// for none. nil means none.
	body func(status int, h http.Header) int
}

// spec returns p's spec, or nil for NoProfile and invalid values.
//
// What a profile adds is called through switches on p (addQuotas, refine)
// rather than function values in the spec, so that the quotas and the
// feedback they write to stay on the stack: with or without a profile, a
// response with nothing to read allocates nothing.
func (p Profile) spec() *profileSpec {
	if p == NoProfile || p >= profileCount {
		return nil
	}
	return &profileSpecs[p]
}

// String returns the profile's name ("none", "github", "atlassian"…).
func (p Profile) String() string {
	if s := p.spec(); s != nil {
		return s.name
	}
	if p == NoProfile {
		return "none"
	}
	return "Profile(" + strconv.Itoa(int(p)) + ")"
}

// Parse reads a response as the package-level Parse does and then as the
// profile reads it. body is the start of the response body (nil when not at
// hand; BodyPrefix says how much the profile wants). Like Parse it is pure
// and reports the pause uncapped.
func (p Profile) Parse(status int, h http.Header, body []byte, now time.Time) Feedback {
	return parse(status, h, body, now, p)
}

// BodyPrefix returns how many leading bytes of the body the profile reads
// for a response with this status and header: 0 when it reads none (always
// for NoProfile, and for every Server-Sent Events stream).
func (p Profile) BodyPrefix(status int, h http.Header) int {
	s := p.spec()
	if s == nil || s.body == nil || profileIsStream(h) {
		return 0
	}
	return min(max(s.body(status, h), 0), profileMaxBody)
}

// IsValid reports whether p is one of the profiles this package defines
// (NoProfile included). An invalid profile reads generically.
func (p Profile) IsValid() bool { return p < profileCount }

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

// jsonSeconds reads the member key as a non-negative number of seconds.
func jsonSeconds(body []byte, key string) (time.Duration, bool) {
	v, ok := jsonValue(body, key)
	if !ok {
		return 0, false
	}
	return num.ParseDuration(v, time.Second)
}

// jsonNumber reads the member key as a non-negative decimal number.
func jsonNumber(body []byte, key string) (num.Decimal, bool) {
	v, ok := jsonValue(body, key)
	if !ok {
		return num.Decimal{}, false
	}
	return num.ParseDecimal(v)
}
