package ratelimit

import (
	"net/http"
	"net/textproto"

	"github.com/headgate-go/headgate/core/internal/ascii"
)

// feedbackHeader names one header Parse reads. The names are listed
// in feedbackHeaderNames, in the same order, lower case.
type feedbackHeader uint8

const (
	// Level 1.
	fbHdrRetryAfter feedbackHeader = iota
	fbHdrRetryAfterMs
	fbHdrMsRetryAfterMs

	// Level 2: IETF.
	fbHdrRateLimit
	fbHdrRateLimitPolicy
	fbHdrRateLimitLimit
	fbHdrRateLimitRemaining
	fbHdrRateLimitReset

	// Level 3: X-RateLimit-* (GitHub, Discord, most gateways).
	fbHdrXRLLimit
	fbHdrXRLRemaining
	fbHdrXRLReset
	fbHdrXRLResetAfter
	fbHdrXRLUsed
	fbHdrXRLResource

	// Level 3: X-Rate-Limit-* (with Zendesk's bare X-Rate-Limit).
	fbHdrXRL2Bare
	fbHdrXRL2Limit
	fbHdrXRL2Remaining
	fbHdrXRL2Reset
	fbHdrXRL2ResetAfter

	// Level 3: OpenAI and Azure OpenAI.
	fbHdrOpenAILimitRequests
	fbHdrOpenAIRemainingRequests
	fbHdrOpenAIResetRequests
	fbHdrOpenAILimitTokens
	fbHdrOpenAIRemainingTokens
	fbHdrOpenAIResetTokens

	// Level 3: Anthropic.
	fbHdrAnthropicRequestsLimit
	fbHdrAnthropicRequestsRemaining
	fbHdrAnthropicRequestsReset
	fbHdrAnthropicTokensLimit
	fbHdrAnthropicTokensRemaining
	fbHdrAnthropicTokensReset
	fbHdrAnthropicInputTokensLimit
	fbHdrAnthropicInputTokensRemaining
	fbHdrAnthropicInputTokensReset
	fbHdrAnthropicOutputTokensLimit
	fbHdrAnthropicOutputTokensRemaining
	fbHdrAnthropicOutputTokensReset

	// Level 3: vendor quota formats.
	fbHdrShopifyCallLimit
	fbHdrSforceLimitInfo

	feedbackHeaderCount

	// fbHdrNone stands for a header a family does not have; get returns nil.
	fbHdrNone = feedbackHeaderCount
)

// feedbackHeaderNames holds every header name Parse reads, lower case.
var feedbackHeaderNames = [feedbackHeaderCount]string{
	fbHdrRetryAfter:     "retry-after",
	fbHdrRetryAfterMs:   "retry-after-ms",
	fbHdrMsRetryAfterMs: "x-ms-retry-after-ms",

	fbHdrRateLimit:          "ratelimit",
	fbHdrRateLimitPolicy:    "ratelimit-policy",
	fbHdrRateLimitLimit:     "ratelimit-limit",
	fbHdrRateLimitRemaining: "ratelimit-remaining",
	fbHdrRateLimitReset:     "ratelimit-reset",

	fbHdrXRLLimit:      "x-ratelimit-limit",
	fbHdrXRLRemaining:  "x-ratelimit-remaining",
	fbHdrXRLReset:      "x-ratelimit-reset",
	fbHdrXRLResetAfter: "x-ratelimit-reset-after",
	fbHdrXRLUsed:       "x-ratelimit-used",
	fbHdrXRLResource:   "x-ratelimit-resource",

	fbHdrXRL2Bare:       "x-rate-limit",
	fbHdrXRL2Limit:      "x-rate-limit-limit",
	fbHdrXRL2Remaining:  "x-rate-limit-remaining",
	fbHdrXRL2Reset:      "x-rate-limit-reset",
	fbHdrXRL2ResetAfter: "x-rate-limit-reset-after",

	fbHdrOpenAILimitRequests:     "x-ratelimit-limit-requests",
	fbHdrOpenAIRemainingRequests: "x-ratelimit-remaining-requests",
	fbHdrOpenAIResetRequests:     "x-ratelimit-reset-requests",
	fbHdrOpenAILimitTokens:       "x-ratelimit-limit-tokens",
	fbHdrOpenAIRemainingTokens:   "x-ratelimit-remaining-tokens",
	fbHdrOpenAIResetTokens:       "x-ratelimit-reset-tokens",

	fbHdrAnthropicRequestsLimit:         "anthropic-ratelimit-requests-limit",
	fbHdrAnthropicRequestsRemaining:     "anthropic-ratelimit-requests-remaining",
	fbHdrAnthropicRequestsReset:         "anthropic-ratelimit-requests-reset",
	fbHdrAnthropicTokensLimit:           "anthropic-ratelimit-tokens-limit",
	fbHdrAnthropicTokensRemaining:       "anthropic-ratelimit-tokens-remaining",
	fbHdrAnthropicTokensReset:           "anthropic-ratelimit-tokens-reset",
	fbHdrAnthropicInputTokensLimit:      "anthropic-ratelimit-input-tokens-limit",
	fbHdrAnthropicInputTokensRemaining:  "anthropic-ratelimit-input-tokens-remaining",
	fbHdrAnthropicInputTokensReset:      "anthropic-ratelimit-input-tokens-reset",
	fbHdrAnthropicOutputTokensLimit:     "anthropic-ratelimit-output-tokens-limit",
	fbHdrAnthropicOutputTokensRemaining: "anthropic-ratelimit-output-tokens-remaining",
	fbHdrAnthropicOutputTokensReset:     "anthropic-ratelimit-output-tokens-reset",

	fbHdrShopifyCallLimit: "x-shopify-shop-api-call-limit",
	fbHdrSforceLimitInfo:  "sforce-limit-info",
}

// feedbackHeaderCanon holds the canonical form of every name (what net/http
// stores), and feedbackHeaderIndex maps the lower-case names to their index.
var (
	feedbackHeaderCanon  [feedbackHeaderCount]string
	feedbackHeaderIndex  = make(map[string]feedbackHeader, feedbackHeaderCount)
	feedbackHeaderMaxLen int
)

func init() {
	for i, name := range feedbackHeaderNames {
		feedbackHeaderCanon[i] = textproto.CanonicalMIMEHeaderKey(name)
		feedbackHeaderIndex[name] = feedbackHeader(i)
		feedbackHeaderMaxLen = max(feedbackHeaderMaxLen, len(name))
	}
}

// feedbackHeaders holds the values of the headers Parse reads,
// gathered in one pass over the header map.
type feedbackHeaders struct {
	vals [feedbackHeaderCount][]string
	keys [feedbackHeaderCount]string // the map key vals came from
	fam  familyHeaders               // the headers named by family (family.go)
	seen bool                        // whether any header was found
}

// collect gathers the headers of h that Parse reads and reports
// whether there was any: the exact names, and the names of a family
// (family.go). It walks the map once instead of looking up each
// of the ~40 names: that also finds keys that are not in canonical form (a
// map built by hand), and a response without rate-limit headers (the common
// case) costs a few byte comparisons per header and allocates nothing.
//
// When two keys differ only in case (possible only in a map built by hand),
// the canonical one wins, else the one that sorts first, so the result does
// not depend on the map's iteration order.
//
// skip lists the lower-case names a profile reads itself: those are not
// read by family.
func (hs *feedbackHeaders) collect(h http.Header, skip []string) bool {
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		id, ok := feedbackHeader(0), false
		if feedbackHeaderCandidate(k) {
			id, ok = feedbackHeaderID(k)
		}
		if !ok {
			if familyCandidate(k) && !foldIn(k, skip) {
				hs.fam.add(k, vs)
				hs.seen = true
			}
			continue
		}
		if old := hs.keys[id]; old != "" &&
			(old == feedbackHeaderCanon[id] || (k != feedbackHeaderCanon[id] && old < k)) {
			continue
		}
		hs.vals[id], hs.keys[id], hs.seen = vs, k, true
	}
	return hs.seen
}

// feedbackHeaderID returns the index of the header k names, in any case.
func feedbackHeaderID(k string) (feedbackHeader, bool) {
	var buf [64]byte
	if len(k) > len(buf) {
		return 0, false
	}
	for i := range len(k) {
		buf[i] = ascii.Lower(k[i])
	}
	id, ok := feedbackHeaderIndex[string(buf[:len(k)])]
	return id, ok
}

// feedbackHeaderCandidate is a cheap filter run on every header name: it
// rejects ordinary headers (Content-Type, Date, X-Request-Id, Accept-Ranges…)
// by length and first letters before any lower-casing or map lookup.
func feedbackHeaderCandidate(k string) bool {
	if len(k) < len("ratelimit") || len(k) > feedbackHeaderMaxLen {
		return false
	}
	switch k[0] | 0x20 {
	case 'r': // retry-after…, ratelimit…
		return k[2]|0x20 == 't'
	case 'x': // x-ratelimit…, x-rate-limit…, x-ms-retry-after-ms, x-shopify-…
		a, b := k[2]|0x20, k[3]|0x20
		return k[1] == '-' && (a == 'r' && b == 'a' || a == 'm' && b == 's' || a == 's' && b == 'h')
	case 'a': // anthropic-ratelimit…
		return k[1]|0x20 == 'n' && k[2]|0x20 == 't'
	case 's': // sforce-limit-info
		return k[1]|0x20 == 'f' && k[2]|0x20 == 'o'
	}
	return false
}

// get returns the values of header id (nil when absent).
func (hs *feedbackHeaders) get(id feedbackHeader) []string {
	if id >= feedbackHeaderCount {
		return nil
	}
	return hs.vals[id]
}

// foldIn reports whether k equals one of names in any case.
func foldIn(k string, names []string) bool {
	for _, n := range names {
		if len(n) == len(k) && ascii.EqualFold(k, n) {
			return true
		}
	}
	return false
}
