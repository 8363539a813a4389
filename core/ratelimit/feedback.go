package ratelimit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/headgate-go/headgate/core/internal/sf"
)

// Source names the header family that decided a Feedback. The zero
// value is FromNone.
type Source uint8

const (
	// FromNone means no rate-limit header was usable; only the status spoke.
	FromNone Source = iota
	// FromRetryAfter means retry-after-ms, x-ms-retry-after-ms or Retry-After
	// on an error status (4xx, 5xx) decided the pause.
	FromRetryAfter
	// FromRateLimit means the IETF RateLimit and RateLimit-Policy fields (or
	// the older RateLimit-Limit, -Remaining and -Reset trio) decided.
	FromRateLimit
	// FromXRateLimit means the de facto X-RateLimit-* family, a provider
	// variant of it (OpenAI, Anthropic, GitHub, Discord), a header read by
	// family, or a profile's quota headers decided.
	FromXRateLimit
)

// String returns the family's short name: "none", "retry-after", "ratelimit"
// or "x-ratelimit".
func (s Source) String() string {
	switch s {
	case FromNone:
		return "none"
	case FromRetryAfter:
		return "retry-after"
	case FromRateLimit:
		return "ratelimit"
	case FromXRateLimit:
		return "x-ratelimit"
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// Feedback is what one response's status and headers say about the quota it
// was counted against. Parse builds it; the zero value is not a valid
// "nothing known" result, because unknown numbers are -1 (see each field).
type Feedback struct {
	// Pause is how long the server asked every caller to wait: 0 for none. It
	// is never negative and not capped: a caller that acts on it caps it
	// (a headgate budget at its WithMaxPause).
	Pause time.Duration

	// Exhausted reports that the response says the quota is spent, or
	// refused the call: a 429, a 503 (unless its retry header is garbage),
	// any error status with a valid retry header, an IETF requests item with
	// r=0, a de facto remaining count of 0 (requests, tokens, concurrency),
	// or what a Profile reads.
	Exhausted bool

	// Remaining is what is left of the binding quota (the spent one, or else
	// the one closest to being spent); -1 when unknown.
	Remaining int

	// Limit is the binding quota's size; -1 when unknown.
	Limit int

	// Reset is the time until the binding quota is restored; -1 when unknown.
	// It is not capped: a daily quota may report a Reset of many hours.
	Reset time.Duration

	// Source is the header family that decided; FromNone when none did.
	Source Source

	// Quotas lists every quota the deciding rate-limit family reported, in
	// header order (nil when none), for budgets with several dimensions.
	Quotas []Quota
}

// Quota is one quota a response reported: a named policy of the IETF fields,
// or one dimension (requests, tokens…) of a provider's de facto headers.
// Unknown numbers are -1, an unknown Window is 0.
type Quota struct {
	// Name is the IETF policy name, the GitHub resource, or the dimension
	// ("requests", "tokens", "input-tokens", "output-tokens").
	Name string
	// Unit is what the quota counts: "requests", "tokens", or an IETF quota
	// unit such as "content-bytes" or "concurrency". A missing unit means
	// "requests".
	Unit string
	// Remaining is what is left of the quota; -1 when unknown.
	Remaining int
	// Limit is the quota's size; -1 when unknown.
	Limit int
	// Reset is the time until the quota is restored; -1 when unknown.
	Reset time.Duration
	// Window is the quota's time window (IETF w); 0 when unknown.
	Window time.Duration
}

// Parse reads what a response's status and headers say about the quota, as
// seen at now, the wall-clock time the response head arrived (used for
// HTTP-dates and absolute reset times). It is a pure function that never
// panics and never reports a negative pause. It reports what the server
// said, uncapped: a Retry-After of 999999999 is 999999999 s, and an overflow
// saturates. A caller caps what it applies (a headgate budget at its
// WithMaxPause).
//
// The pause comes from the first of three levels that applies:
//
//  1. On an error status (4xx, 5xx), the retry headers: retry-after-ms,
//     then x-ms-retry-after-ms, then Retry-After (delta-seconds, decimals
//     allowed, or an HTTP-date, read leniently). A header sent on several
//     lines gives its longest valid wait; an invalid value counts as absent.
//  2. The IETF RateLimit and RateLimit-Policy fields (and their draft-07 and
//     RateLimit-Limit/-Remaining/-Reset forms): a spent requests item pauses
//     until its reset. Quotas in other units (qu="content-bytes") are listed
//     in Quotas, in their own unit, but never pause.
//  3. Only when level 2 is absent or unusable, the de facto headers
//     (X-RateLimit-*, X-Rate-Limit-*, the OpenAI and Anthropic dimensions,
//     Shopify's call limit, Salesforce's Sforce-Limit-Info, and every other
//     name holding "ratelimit" or "rate-limit", read by family): a spent
//     quota pauses until its reset.
//
// Levels 2 and 3 fill Remaining, Limit, Reset and Quotas even when level 1
// decided the pause; the binding quota (a spent one, else the one closest to
// being spent) fills Remaining, Limit and Reset. A remaining count sent
// twice, or folded into a list ("991, 98"), reads as the smallest. A 429 is
// always Exhausted; so is a 503, unless it carries a retry header that does
// not parse (a broken proxy's page, not a quota); so is any error status
// with a valid retry header (GitHub's 403, a 418 ban, a 529 overload). Header names are matched in any
// case, even in a map built by hand. The package doc lists every header read
// and how; a Profile (Profile.Parse) adds what only a provider's own headers
// or body say.
func Parse(status int, h http.Header, now time.Time) Feedback {
	return parse(status, h, nil, now, nil)
}

// parse reads a response as Parse does, then as profile pr reads it (nil
// for none; body is the prefix of the body pr asked for, or nil).
func parse(status int, h http.Header, body []byte, now time.Time, pr *profile) Feedback {
	fb := Feedback{Remaining: -1, Limit: -1, Reset: -1}
	fb.Exhausted = status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable

	var hs feedbackHeaders
	var skip []string // the headers the profile reads itself
	if pr != nil {
		skip = pr.headers
	}
	if !hs.collect(h, skip) && pr == nil {
		return fb // the common case: no rate-limit header at all
	}

	// Level 1: the retry headers, on error responses only: a 4xx or 5xx
	// that names a wait asked for it, whatever its status (a 418 ban, a 529
	// overload).
	pause, level1, retrySent := time.Duration(0), false, false
	if status >= 400 && status <= 599 {
		pause, level1, retrySent = parseRetryAfterHeaders(&hs, now)
		if level1 {
			fb.Source = FromRetryAfter
			fb.Exhausted = true // a refusal with a wait: a 403 with Retry-After is a throttle, not a denial
		} else if retrySent && status == http.StatusServiceUnavailable {
			fb.Exhausted = false // a garbage Retry-After: an outage page, not a quota
		}
	}

	// Levels 2 and 3: the quota state. Level 3 only when level 2 said nothing.
	// A profile adds the quotas only its provider's headers report.
	var qs feedbackQuotas
	source := FromNone
	if parseIETFFeedback(&hs, now, &qs) {
		source = FromRateLimit
	} else if parseXRateLimitFeedback(&hs, now, &qs) {
		source = FromXRateLimit
	}
	if pr != nil {
		if s := pr.addQuotas(h, now, &qs); source == FromNone {
			source = s
		}
	}
	if fb.Source == FromNone {
		fb.Source = source
	}

	spentPause, spent, bi := qs.decide()
	if bi >= 0 {
		b := &qs.q[bi]
		fb.Remaining, fb.Limit, fb.Reset = b.Remaining, b.Limit, b.Reset
	}
	fb.Exhausted = fb.Exhausted || spent
	if !level1 {
		pause = spentPause // the binding quota is a spent one, so this is its reset
	}
	fb.Pause = pause // every parser returns pauses >= 0
	if qs.n > 0 {
		fb.Quotas = append([]Quota(nil), qs.q[:qs.n]...)
	}
	if pr != nil {
		pr.refine(status, h, body, now, &fb)
	}
	return fb
}

// feedbackMaxQuotas bounds the quotas one response can report: 32 IETF items
// plus 32 policies without an item. The de facto families report at most 8.
const feedbackMaxQuotas = 2 * sf.MaxMembers

// feedbackQuotas collects the quotas of the deciding level. binds[i] says
// whether quota i counts for Exhausted, Pause and the binding choice (an IETF
// quota in a unit other than requests does not; neither does one whose
// remaining count is unknown).
type feedbackQuotas struct {
	q     [feedbackMaxQuotas]Quota
	binds [feedbackMaxQuotas]bool
	n     int
}

// add appends q, dropping it when the array is full (it never is: the callers
// bound their inputs by the same constants).
func (qs *feedbackQuotas) add(q Quota, binds bool) {
	if qs.n == len(qs.q) {
		return
	}
	qs.q[qs.n], qs.binds[qs.n] = q, binds && q.Remaining >= 0
	qs.n++
}

// decide returns the pause the spent quotas ask for (the longest reset among
// them), whether any is spent, and the index of the binding quota (-1 when
// none binds).
func (qs *feedbackQuotas) decide() (pause time.Duration, spent bool, binding int) {
	binding = -1
	for i := range qs.n {
		if !qs.binds[i] {
			continue
		}
		q := &qs.q[i]
		if q.Remaining == 0 {
			spent = true
			pause = max(pause, q.Reset)
		}
		if binding < 0 || quotaCloserToSpent(q, &qs.q[binding]) {
			binding = i
		}
	}
	return pause, spent, binding
}

// quotaCloserToSpent reports whether a binds tighter than b: a spent quota
// before one that is not (between two spent ones, the one that resets last);
// else the smaller remaining fraction of the limit when both limits are known;
// else the smaller remaining count. Ties keep b, the earlier quota, so the
// choice follows header order.
func quotaCloserToSpent(a, b *Quota) bool {
	aSpent, bSpent := a.Remaining == 0, b.Remaining == 0
	switch {
	case aSpent != bSpent:
		return aSpent
	case aSpent:
		return a.Reset > b.Reset
	case a.Limit > 0 && b.Limit > 0:
		fa := float64(a.Remaining) / float64(a.Limit)
		fb := float64(b.Remaining) / float64(b.Limit)
		if fa != fb {
			return fa < fb
		}
	}
	return a.Remaining < b.Remaining
}
