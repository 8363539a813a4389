package ratelimit

import (
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/internal/sf"
)

// fbT0 is the fixed wall-clock instant most feedback tests read headers at.
var fbT0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fbHeader builds a header from name, value pairs with Header.Add, so repeated
// names keep their order and names are canonicalized as net/http would.
func fbHeader(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// fbUnixAt returns the Unix time, in seconds, d after fbT0, as a header value.
func fbUnixAt(d time.Duration) string {
	return strconv.FormatInt(fbT0.Add(d).Unix(), 10)
}

// fbWant is the part of a Feedback most table tests check.
type fbWant struct {
	pause     time.Duration
	exhausted bool
	remaining int
	limit     int
	reset     time.Duration
	source    Source
}

// fbUnknown is what Parse returns for a response that says nothing
// about the quota.
var fbUnknown = fbWant{remaining: -1, limit: -1, reset: -1}

// feedbackCase is one row of a Parse table.
type feedbackCase struct {
	name   string
	status int
	h      http.Header
	want   fbWant
}

// runFeedbackCases runs Parse at fbT0 over a table, echoing the call
// on failure.
func runFeedbackCases(t *testing.T, cases []feedbackCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			fb := Parse(c.status, c.h, fbT0)
			got := fbWant{fb.Pause, fb.Exhausted, fb.Remaining, fb.Limit, fb.Reset, fb.Source}
			if got != c.want {
				t.Errorf("Parse(%d, %v, fbT0)\n got %+v\nwant %+v", c.status, c.h, got, c.want)
			}
		})
	}
}

func TestParseNoHeaders(t *testing.T) {
	runFeedbackCases(t, []feedbackCase{
		{"plain-200", 200, fbHeader("Content-Type", "text/plain", "Date", "Sun, 01 Jun 2025 12:00:00 GMT"), fbUnknown},
		{"nil-header", 200, nil, fbUnknown},
		{"429-alone", 429, nil, fbWant{exhausted: true, remaining: -1, limit: -1, reset: -1}},
		{"503-alone", 503, fbHeader("Server", "nginx"), fbWant{exhausted: true, remaining: -1, limit: -1, reset: -1}},
		{"403-alone", 403, fbHeader("Content-Type", "application/json"), fbUnknown},
		{"500-alone", 500, nil, fbUnknown},
		{"empty-values", 429, http.Header{"Retry-After": {}, "X-Ratelimit-Remaining": nil},
			fbWant{exhausted: true, remaining: -1, limit: -1, reset: -1}},
	})
	if fb := Parse(200, fbHeader("Server", "x"), fbT0); fb.Quotas != nil {
		t.Errorf("Parse(200, no rate-limit headers).Quotas = %v, want nil", fb.Quotas)
	}
}

// TestParsePrecedence checks which level decides, level by level.
func TestParsePrecedence(t *testing.T) {
	runFeedbackCases(t, []feedbackCase{
		{"retry-after-ms-beats-retry-after", 429,
			fbHeader("Retry-After", "30", "retry-after-ms", "1500"),
			fbWant{1500 * time.Millisecond, true, -1, -1, -1, FromRetryAfter}},
		{"x-ms-retry-after-ms-beats-retry-after", 429,
			fbHeader("Retry-After", "30", "x-ms-retry-after-ms", "250"),
			fbWant{250 * time.Millisecond, true, -1, -1, -1, FromRetryAfter}},
		{"retry-after-ms-beats-x-ms-retry-after-ms", 429,
			fbHeader("x-ms-retry-after-ms", "250", "retry-after-ms", "100"),
			fbWant{100 * time.Millisecond, true, -1, -1, -1, FromRetryAfter}},
		{"invalid-retry-after-ms-falls-to-retry-after", 429,
			fbHeader("Retry-After", "30", "retry-after-ms", "-5", "x-ms-retry-after-ms", "NaN"),
			fbWant{30 * time.Second, true, -1, -1, -1, FromRetryAfter}},
		{"retry-after-on-503", 503, fbHeader("Retry-After", "7"),
			fbWant{7 * time.Second, true, -1, -1, -1, FromRetryAfter}},
		{"retry-after-on-403-is-a-throttle", 403, fbHeader("Retry-After", "60"),
			fbWant{60 * time.Second, true, -1, -1, -1, FromRetryAfter}},
		{"retry-after-on-200-ignored", 200, fbHeader("Retry-After", "30"), fbUnknown},
		{"retry-after-on-301-ignored", 301, fbHeader("Retry-After", "30"), fbUnknown},
		{"retry-after-on-200-ignored-x-ratelimit-applies", 200,
			fbHeader("Retry-After", "30", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "12"),
			fbWant{12 * time.Second, true, 0, -1, 12 * time.Second, FromXRateLimit}},
		{"retry-after-wins-pause-x-ratelimit-fills-quota", 429,
			fbHeader("Retry-After", "5", "X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "40"),
			fbWant{5 * time.Second, true, 0, 100, 40 * time.Second, FromRetryAfter}},
		{"retry-after-past-date-wins-with-no-pause", 429,
			fbHeader("Retry-After", "Sun, 01 Jun 2025 11:00:00 GMT", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "40"),
			fbWant{0, true, 0, -1, 40 * time.Second, FromRetryAfter}},
		{"garbage-retry-after-falls-to-x-ratelimit", 429,
			fbHeader("Retry-After", "soon", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "40"),
			fbWant{40 * time.Second, true, 0, -1, 40 * time.Second, FromXRateLimit}},
		{"ietf-beats-x-ratelimit", 200,
			fbHeader("RateLimit", `"burst";r=0;t=12`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "40"),
			fbWant{12 * time.Second, true, 0, -1, 12 * time.Second, FromRateLimit}},
		{"malformed-ratelimit-falls-through-to-x-ratelimit", 200,
			fbHeader("RateLimit", `"burst";r=0;t=`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "40"),
			fbWant{40 * time.Second, true, 0, -1, 40 * time.Second, FromXRateLimit}},
		{"ratelimit-without-usable-item-falls-through", 200,
			fbHeader("RateLimit", `"burst";r=-1;t=5`, "X-RateLimit-Remaining", "3"),
			fbWant{0, false, 3, -1, -1, FromXRateLimit}},
		{"non-request-unit-gives-no-pause", 200,
			fbHeader("RateLimit-Policy", `"bytes";q=1000;qu="content-bytes";w=60`, "RateLimit", `"bytes";r=0;t=30`,
				"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "40"),
			fbWant{0, false, -1, -1, -1, FromRateLimit}},
		{"github-403-pauses-until-reset", 403,
			fbHeader("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Used", "5000",
				"X-RateLimit-Reset", fbUnixAt(25*time.Minute), "X-RateLimit-Resource", "core"),
			fbWant{25 * time.Minute, true, 0, 5000, 25 * time.Minute, FromXRateLimit}},
		{"429-quota-left-names-no-pause", 429, // another limit refused it: slow down, no pause
			fbHeader("X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "20"),
			fbWant{0, true, 3, -1, 20 * time.Second, FromXRateLimit}},
		{"503-spent-quota-waits-for-its-reset", 503,
			fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "20"),
			fbWant{20 * time.Second, true, 0, -1, 20 * time.Second, FromXRateLimit}},
		{"200-not-spent-does-not-pause", 200,
			fbHeader("X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "20"),
			fbWant{0, false, 3, -1, 20 * time.Second, FromXRateLimit}},
	})
}

// TestParseUncapped checks that Parse reports the pause the server said,
// whatever its size and source (issue 17: the parser reports, the budget
// caps).
func TestParseUncapped(t *testing.T) {
	huge := fbHeader("Retry-After", "86400")
	uncapped := []struct {
		name   string
		status int
		h      http.Header
		want   time.Duration
	}{
		{"retry-after-day", 429, huge, 24 * time.Hour},
		{"retry-after-999999999", 429, fbHeader("Retry-After", "999999999"), 999999999 * time.Second},
		{"retry-after-overflow-saturates", 429, fbHeader("Retry-After", strings.Repeat("9", 400)), math.MaxInt64},
		{"retry-after-ms-as-is", 429, fbHeader("retry-after-ms", "7200000.5"), 2*time.Hour + 500*time.Microsecond},
		{"ietf-huge-t", 200, fbHeader("RateLimit", `a;r=0;t=999999999999999`), math.MaxInt64},
		{"unix-far-future", 200, fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", fbUnixAt(48*time.Hour)), 48 * time.Hour},
	}
	for _, tt := range uncapped {
		if got := Parse(tt.status, tt.h, fbT0).Pause; got != tt.want {
			t.Errorf("%s: Parse(%d, %v, fbT0).Pause = %v, want %v (uncapped)", tt.name, tt.status, tt.h, got, tt.want)
		}
	}
}

// TestParseHeaderCase checks that header names match in any case,
// even in a map built by hand, and that a map holding one header under two
// spellings gives the same answer on every call.
func TestParseHeaderCase(t *testing.T) {
	spent := fbWant{30 * time.Second, true, 0, 10, 30 * time.Second, FromXRateLimit}
	for _, h := range []http.Header{
		{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Limit": {"10"}},
		{"x-ratelimit-remaining": {"0"}, "x-ratelimit-reset": {"30"}, "x-ratelimit-limit": {"10"}},
		{"X-RATELIMIT-REMAINING": {"0"}, "X-RATELIMIT-RESET": {"30"}, "X-RATELIMIT-LIMIT": {"10"}},
		{"X-RateLimit-Remaining": {"0"}, "x-RateLimit-reset": {"30"}, "X-RATELIMIT-limit": {"10"}},
	} {
		fb := Parse(200, h, fbT0)
		got := fbWant{fb.Pause, fb.Exhausted, fb.Remaining, fb.Limit, fb.Reset, fb.Source}
		if got != spent {
			t.Errorf("Parse(200, %v, fbT0) = %+v, want %+v", h, got, spent)
		}
	}

	// Two spellings of one header: the canonical key wins, else the key that
	// sorts first; never the map's iteration order.
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"1"}, "retry-after": {"2"}, "RETRY-AFTER": {"3"}}, 1 * time.Second},
		{http.Header{"retry-after": {"2"}, "RETRY-AFTER": {"3"}, "Retry-after": {"4"}}, 3 * time.Second},
		{http.Header{"retry-after": {"2"}, "Retry-After": {}}, 2 * time.Second},
	}
	for _, tt := range tests {
		for range 20 {
			if got := Parse(429, tt.h, fbT0).Pause; got != tt.want {
				t.Fatalf("Parse(429, %v, fbT0).Pause = %v, want %v", tt.h, got, tt.want)
			}
		}
	}
}

// TestFeedbackHeaderNames checks the table of names against the cheap
// filter: a name the filter rejected would never be read.
func TestFeedbackHeaderNames(t *testing.T) {
	for i, name := range feedbackHeaderNames {
		if name == "" {
			t.Fatalf("feedbackHeaderNames[%d] is empty", i)
		}
		for _, k := range []string{name, strings.ToUpper(name), http.CanonicalHeaderKey(name)} {
			if !feedbackHeaderCandidate(k) {
				t.Errorf("feedbackHeaderCandidate(%q) = false, want true", k)
			}
			if id, ok := feedbackHeaderID(k); !ok || id != feedbackHeader(i) {
				t.Errorf("feedbackHeaderID(%q) = %d, %v; want %d, true", k, id, ok, i)
			}
		}
	}
	for _, k := range []string{"Content-Type", "X-Request-Id", "Accept-Ranges", "Referrer-Policy",
		"Access-Control-Allow-Origin", "X-Content-Type-Options", "Retry", "X-Ratelimit-Remaining-Minute"} {
		if _, ok := feedbackHeaderID(k); ok {
			t.Errorf("feedbackHeaderID(%q) found a header, want none", k)
		}
		if k != "X-Ratelimit-Remaining-Minute" && feedbackHeaderCandidate(k) {
			t.Errorf("feedbackHeaderCandidate(%q) = true, want the cheap filter to reject it", k)
		}
	}
}

// TestParseRepeatedHeaders checks how a header sent on several
// lines, or folded into a list, is read: conservatively. Retry-After is a
// singleton field (RFC 9110 section 10.2.3), so a second line is an error
// on the way, and the longest valid wait is the safe reading (Header.Get
// would read the first line only); a remaining count reads as the smallest.
// Any other header uses its first valid value.
func TestParseRepeatedHeaders(t *testing.T) {
	runFeedbackCases(t, []feedbackCase{
		{"retry-after-longest-valid", 429, fbHeader("Retry-After", "soon", "Retry-After", "5", "Retry-After", "9"),
			fbWant{9 * time.Second, true, -1, -1, -1, FromRetryAfter}},
		{"retry-after-longest-date-or-delta", 429, fbHeader("Retry-After", "120", "Retry-After", "Sun, 01 Jun 2025 12:00:30 GMT"),
			fbWant{120 * time.Second, true, -1, -1, -1, FromRetryAfter}},
		{"retry-after-ms-longest", 429, fbHeader("retry-after-ms", "20", "retry-after-ms", "1500"),
			fbWant{1500 * time.Millisecond, true, -1, -1, -1, FromRetryAfter}},
		{"remaining-smallest-line", 200, fbHeader("X-RateLimit-Remaining", "-1", "X-RateLimit-Remaining", "4", "X-RateLimit-Remaining", "2"),
			fbWant{0, false, 2, -1, -1, FromXRateLimit}},
		{"remaining-spent-line", 200, fbHeader("X-RateLimit-Remaining", "4", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "8"),
			fbWant{8 * time.Second, true, 0, -1, 8 * time.Second, FromXRateLimit}},
		{"remaining-folded-list", 200, fbHeader("X-RateLimit-Limit", "1000", "X-RateLimit-Remaining", "991, 98"),
			fbWant{0, false, 98, 1000, -1, FromXRateLimit}},
		{"ietf-trio-remaining-folded", 200, fbHeader("RateLimit-Remaining", "50, 7"),
			fbWant{0, false, 7, -1, -1, FromRateLimit}},
		{"reset-first-valid", 200, fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "x", "X-RateLimit-Reset", "8"),
			fbWant{8 * time.Second, true, 0, -1, 8 * time.Second, FromXRateLimit}},
	})
}

func TestSourceString(t *testing.T) {
	for s, want := range map[Source]string{
		FromNone:       "none",
		FromRetryAfter: "retry-after",
		FromRateLimit:  "ratelimit",
		FromXRateLimit: "x-ratelimit",
		Source(9):      "Source(9)",
	} {
		if got := s.String(); got != want {
			t.Errorf("Source(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
}

// TestQuotaCloserToSpent checks the binding order: spent first (the later
// reset among spent ones), else the smaller fraction, else fewer remaining.
func TestQuotaCloserToSpent(t *testing.T) {
	q := func(remaining, limit int, reset time.Duration) Quota {
		return Quota{Remaining: remaining, Limit: limit, Reset: reset}
	}
	tests := []struct {
		name string
		a, b Quota
		want bool
	}{
		{"spent-beats-unspent", q(0, 1000, time.Second), q(1, 2, time.Hour), true},
		{"unspent-loses-to-spent", q(1, 2, time.Hour), q(0, 1000, time.Second), false},
		{"spent-later-reset", q(0, 10, time.Hour), q(0, 10, time.Minute), true},
		{"spent-unknown-reset-loses", q(0, 10, -1), q(0, 10, time.Minute), false},
		{"smaller-fraction", q(100, 1000, 0), q(50, 100, 0), true},
		{"larger-fraction", q(50, 100, 0), q(100, 1000, 0), false},
		{"equal-fraction-fewer-remaining", q(5, 10, 0), q(50, 100, 0), true},
		{"no-limit-fewer-remaining", q(5, -1, 0), q(50, 100, 0), true},
		{"no-limit-more-remaining", q(60, -1, 0), q(50, -1, 0), false},
		{"tie-keeps-earlier", q(5, 10, 0), q(5, 10, 0), false},
		{"huge-numbers", q(math.MaxInt-1, math.MaxInt, 0), q(math.MaxInt, math.MaxInt, 0), true},
	}
	for _, tt := range tests {
		if got := quotaCloserToSpent(&tt.a, &tt.b); got != tt.want {
			t.Errorf("%s: quotaCloserToSpent(%+v, %+v) = %v, want %v", tt.name, tt.a, tt.b, got, tt.want)
		}
	}
}

// TestParseQuotas checks the Quotas list of each family.
func TestParseQuotas(t *testing.T) {
	tests := []struct {
		name   string
		status int
		h      http.Header
		want   []Quota
	}{
		{"none", 200, fbHeader("Retry-After", "5"), nil},
		{"ietf", 200, fbHeader(
			"RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400, "bytes";q=5000;qu="content-bytes";w=1`,
			"RateLimit", `"daily";r=0;t=3000, "bytes";r=10`),
			[]Quota{
				{"daily", "requests", 0, 1000, 3000 * time.Second, 86400 * time.Second},
				{"bytes", "content-bytes", 10, 5000, -1, time.Second},
				{"burst", "requests", -1, 100, -1, 60 * time.Second},
			}},
		{"github", 200, fbHeader("X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "29",
			"X-RateLimit-Reset", fbUnixAt(time.Minute), "X-RateLimit-Resource", "search"),
			[]Quota{{"search", "requests", 29, 30, time.Minute, 0}}},
		{"openai", 200, fbHeader(
			"x-ratelimit-limit-requests", "5000", "x-ratelimit-remaining-requests", "4999", "x-ratelimit-reset-requests", "12ms",
			"x-ratelimit-limit-tokens", "160000", "x-ratelimit-remaining-tokens", "159976", "x-ratelimit-reset-tokens", "9ms"),
			[]Quota{
				{"requests", "requests", 4999, 5000, 12 * time.Millisecond, 0},
				{"tokens", "tokens", 159976, 160000, 9 * time.Millisecond, 0},
			}},
		{"draft-07", 200, fbHeader("RateLimit-Policy", "10;w=1, 100;w=60", "RateLimit", "limit=100, remaining=50, reset=30"),
			[]Quota{{"requests", "requests", 50, 100, 30 * time.Second, time.Minute}}},
		{"github-empty-resource", 200, fbHeader("X-RateLimit-Remaining", "1", "X-RateLimit-Resource", " "),
			[]Quota{{"requests", "requests", 1, -1, -1, 0}}},
		{"github-oversized-resource", 200, fbHeader("X-RateLimit-Remaining", "1", "X-RateLimit-Resource", strings.Repeat("r", 65)),
			[]Quota{{"requests", "requests", 1, -1, -1, 0}}},
		{"retry-after-with-ietf", 429, fbHeader("Retry-After", "5", "RateLimit", "a;r=0"),
			[]Quota{{"a", "requests", 0, -1, -1, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse(tt.status, tt.h, fbT0).Quotas; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%d, %v, fbT0).Quotas\n got %+v\nwant %+v", tt.status, tt.h, got, tt.want)
			}
		})
	}
}

// TestParseNoAllocs checks the allocation promise of the hot paths:
// a response without rate-limit headers and one with only Retry-After cost
// no allocation.
func TestParseNoAllocs(t *testing.T) {
	plain := fbHeader("Content-Type", "application/json", "Date", "Sun, 01 Jun 2025 12:00:00 GMT",
		"Server", "nginx", "Cache-Control", "no-store", "X-Request-Id", "abc")
	refused := fbHeader("Content-Type", "application/json", "Retry-After", "Sun, 01 Jun 2025 12:00:30 GMT")
	for _, c := range []struct {
		name   string
		status int
		h      http.Header
	}{{"plain-200", 200, plain}, {"ignored-retry-after-200", 200, refused}, {"retry-after-429", 429, refused}} {
		if allocs := testing.AllocsPerRun(100, func() { Parse(c.status, c.h, fbT0) }); allocs != 0 {
			t.Errorf("Parse(%s) allocates %v times per call, want 0", c.name, allocs)
		}
	}
}

// TestParseHostile checks that oversized and adversarial headers are
// bounded: they parse as absent or are capped, and never panic.
func TestParseHostile(t *testing.T) {
	many := strings.Repeat(`a;r=0;t=5, `, sf.MaxMembers) + `a;r=0;t=5`
	manyParams := "a;r=0;t=5" + strings.Repeat(";x=1", sf.MaxMembers)
	runFeedbackCases(t, []feedbackCase{
		{"too-many-items", 200, fbHeader("RateLimit", many), fbUnknown},
		{"too-many-params", 200, fbHeader("RateLimit", manyParams), fbUnknown},
		{"most-items-allowed", 200, fbHeader("RateLimit", strings.Repeat(`a;r=1, `, sf.MaxMembers-1)+`a;r=0;t=5`),
			fbWant{5 * time.Second, true, 0, -1, 5 * time.Second, FromRateLimit}},
		{"long-garbage", 429, fbHeader("Retry-After", strings.Repeat("\x00\xff", 1<<14),
			"X-RateLimit-Reset", strings.Repeat("1", 1<<14)), fbWant{exhausted: true, remaining: -1, limit: -1, reset: -1}},
		{"huge-remaining-saturates", 200, fbHeader("X-RateLimit-Remaining", strings.Repeat("9", 100)),
			fbWant{0, false, math.MaxInt, -1, -1, FromXRateLimit}},
		{"too-many-field-lines", 200, func() http.Header {
			h := http.Header{}
			for range sf.MaxMembers + 1 {
				h.Add("RateLimit", "a;r=0;t=1")
			}
			return h
		}(), fbUnknown},
	})
}
