package ratelimit

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestParseXRateLimit(t *testing.T) {
	runFeedbackCases(t, []feedbackCase{
		{"spent-delta-reset", 200, fbHeader("X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30"),
			fbWant{30 * time.Second, true, 0, 60, 30 * time.Second, FromXRateLimit}},
		{"not-spent", 200, fbHeader("X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "59", "X-RateLimit-Reset", "30"),
			fbWant{0, false, 59, 60, 30 * time.Second, FromXRateLimit}},
		{"spent-without-reset", 200, fbHeader("X-RateLimit-Remaining", "0"),
			fbWant{0, true, 0, -1, -1, FromXRateLimit}},
		{"spent-reset-in-past", 200, fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", fbUnixAt(-time.Minute)),
			fbWant{0, true, 0, -1, 0, FromXRateLimit}},
		{"limit-without-remaining", 200, fbHeader("X-RateLimit-Limit", "60", "X-RateLimit-Reset", "30"), fbUnknown},
		{"negative-remaining-is-fbUnknown", 200, fbHeader("X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", "0"), fbUnknown},
		// Reddit writes its counts as decimals ("599.0", "0.0"):
		// https://www.reddit.com/r/redditdev/comments/1yxrp7/formal_ratelimiting_headers/
		// A fraction is dropped: less than one request left is none.
		{"decimal-remaining-reddit", 200, fbHeader("X-Ratelimit-Used", "1", "X-Ratelimit-Remaining", "599.0", "X-Ratelimit-Reset", "300"),
			fbWant{0, false, 599, -1, 300 * time.Second, FromXRateLimit}},
		{"decimal-remaining-spent", 200, fbHeader("X-Ratelimit-Remaining", "0.0", "X-Ratelimit-Reset", "12"),
			fbWant{12 * time.Second, true, 0, -1, 12 * time.Second, FromXRateLimit}},
		{"decimal-remaining-fraction", 200, fbHeader("X-RateLimit-Remaining", "0.5"),
			fbWant{0, true, 0, -1, -1, FromXRateLimit}},
		{"garbage-remaining", 200, fbHeader("X-RateLimit-Remaining", "none"), fbUnknown},
		{"garbage-reset", 200, fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "later"),
			fbWant{0, true, 0, -1, -1, FromXRateLimit}},
		{"x-rate-limit-spelling", 200,
			fbHeader("X-Rate-Limit-Limit", "10000", "X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", "600"),
			fbWant{600 * time.Second, true, 0, 10000, 600 * time.Second, FromXRateLimit}},
		{"x-ratelimit-beats-x-rate-limit", 200,
			fbHeader("X-RateLimit-Remaining", "5", "X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", "600"),
			fbWant{0, false, 5, -1, -1, FromXRateLimit}},
		{"github-used-gives-remaining", 403,
			fbHeader("X-RateLimit-Limit", "60", "X-RateLimit-Used", "60", "X-RateLimit-Reset", fbUnixAt(90*time.Second)),
			fbWant{90 * time.Second, true, 0, 60, 90 * time.Second, FromXRateLimit}},
		{"github-200-last-request", 200,
			fbHeader("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", fbUnixAt(time.Hour/2)),
			fbWant{time.Hour / 2, true, 0, 5000, time.Hour / 2, FromXRateLimit}},
		{"github-429-secondary-retry-after", 429,
			fbHeader("Retry-After", "60", "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4000",
				"X-RateLimit-Reset", fbUnixAt(time.Hour/2)),
			fbWant{time.Minute, true, 4000, 5000, time.Hour / 2, FromRetryAfter}},
		{"discord-reset-after-preferred", 200,
			fbHeader("X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "0",
				"X-RateLimit-Reset", fbUnixAt(time.Hour), "X-RateLimit-Reset-After", "1.25"),
			fbWant{1250 * time.Millisecond, true, 0, 5, 1250 * time.Millisecond, FromXRateLimit}},
		{"discord-decimal-unix-reset", 200,
			fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", fbUnixAt(2*time.Second)+".5"),
			fbWant{2500 * time.Millisecond, true, 0, -1, 2500 * time.Millisecond, FromXRateLimit}},
		{"bad-reset-after-uses-reset", 200,
			fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "7", "X-RateLimit-Reset-After", "-1"),
			fbWant{7 * time.Second, true, 0, -1, 7 * time.Second, FromXRateLimit}},
		{"x-rate-limit-reset-after", 200, fbHeader("X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset-After", "3"),
			fbWant{3 * time.Second, true, 0, -1, 3 * time.Second, FromXRateLimit}},
		{"http-date-reset", 200, fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "Sun, 01 Jun 2025 12:00:45 GMT"),
			fbWant{45 * time.Second, true, 0, -1, 45 * time.Second, FromXRateLimit}},
		{"limit-list-first-number", 200, fbHeader("X-RateLimit-Limit", "100, 100", "X-RateLimit-Remaining", "1"),
			fbWant{0, false, 1, 100, -1, FromXRateLimit}},
	})
}

func TestParseOpenAI(t *testing.T) {
	ok := func(kv ...string) http.Header {
		base := []string{
			"x-ratelimit-limit-requests", "5000", "x-ratelimit-remaining-requests", "4999", "x-ratelimit-reset-requests", "12ms",
			"x-ratelimit-limit-tokens", "160000", "x-ratelimit-remaining-tokens", "159000", "x-ratelimit-reset-tokens", "375ms",
		}
		h := fbHeader(base...)
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	runFeedbackCases(t, []feedbackCase{
		{"not-spent-binding-fraction", 200, ok(),
			fbWant{0, false, 159000, 160000, 375 * time.Millisecond, FromXRateLimit}},
		{"requests-spent", 200, ok("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6m0s"),
			fbWant{6 * time.Minute, true, 0, 5000, 6 * time.Minute, FromXRateLimit}},
		{"tokens-spent", 200, ok("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1h2m3.5s"),
			fbWant{time.Hour + 2*time.Minute + 3500*time.Millisecond, true, 0, 160000, time.Hour + 2*time.Minute + 3500*time.Millisecond, FromXRateLimit}},
		{"both-spent-longest-reset", 429,
			ok("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20s",
				"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "0.5s"),
			fbWant{20 * time.Second, true, 0, 5000, 20 * time.Second, FromXRateLimit}},
		{"tokens-binding-by-fraction", 200, ok("x-ratelimit-remaining-tokens", "100", "x-ratelimit-reset-tokens", "20ms"),
			fbWant{0, false, 100, 160000, 20 * time.Millisecond, FromXRateLimit}},
		{"azure-seconds-reset", 200, ok("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "12"),
			fbWant{12 * time.Second, true, 0, 160000, 12 * time.Second, FromXRateLimit}},
		{"azure-minus-one-ignored", 200, fbHeader("x-ratelimit-limit-tokens", "-1", "x-ratelimit-remaining-tokens", "-1",
			"x-ratelimit-reset-tokens", "0", "x-ratelimit-remaining-requests", "99"),
			fbWant{0, false, 99, -1, -1, FromXRateLimit}},
		{"negative-duration-ignored", 200, ok("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-6m0s"),
			fbWant{0, true, 0, 5000, -1, FromXRateLimit}},
		{"azure-retry-after-ms-on-429", 429, ok("retry-after-ms", "2500", "x-ratelimit-remaining-requests", "0"),
			fbWant{2500 * time.Millisecond, true, 0, 5000, 12 * time.Millisecond, FromRetryAfter}},
	})
}

func TestParseAnthropic(t *testing.T) {
	at := func(d time.Duration) string { return fbT0.Add(d).Format(time.RFC3339Nano) }
	ok := func(kv ...string) http.Header {
		base := []string{
			"anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "49",
			"anthropic-ratelimit-requests-reset", at(time.Second),
			"anthropic-ratelimit-tokens-limit", "40000", "anthropic-ratelimit-tokens-remaining", "39000",
			"anthropic-ratelimit-tokens-reset", at(2 * time.Second),
			"anthropic-ratelimit-input-tokens-limit", "30000", "anthropic-ratelimit-input-tokens-remaining", "29000",
			"anthropic-ratelimit-input-tokens-reset", at(3 * time.Second),
			"anthropic-ratelimit-output-tokens-limit", "8000", "anthropic-ratelimit-output-tokens-remaining", "7900",
			"anthropic-ratelimit-output-tokens-reset", at(4 * time.Second),
		}
		h := fbHeader(base...)
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	runFeedbackCases(t, []feedbackCase{
		{"not-spent-binding-fraction", 200, ok(),
			fbWant{0, false, 29000, 30000, 3 * time.Second, FromXRateLimit}},
		{"requests-spent", 200, ok("anthropic-ratelimit-requests-remaining", "0"),
			fbWant{time.Second, true, 0, 50, time.Second, FromXRateLimit}},
		{"output-tokens-spent", 200, ok("anthropic-ratelimit-output-tokens-remaining", "0",
			"anthropic-ratelimit-output-tokens-reset", "2025-06-01T13:00:30+01:00"),
			fbWant{30 * time.Second, true, 0, 8000, 30 * time.Second, FromXRateLimit}},
		{"input-tokens-spent-fractional-reset", 200, ok("anthropic-ratelimit-input-tokens-remaining", "0",
			"anthropic-ratelimit-input-tokens-reset", "2025-06-01T12:00:07.25Z"),
			fbWant{7250 * time.Millisecond, true, 0, 30000, 7250 * time.Millisecond, FromXRateLimit}},
		{"429-retry-after-wins", 429, ok("retry-after", "17", "anthropic-ratelimit-tokens-remaining", "0"),
			fbWant{17 * time.Second, true, 0, 40000, 2 * time.Second, FromRetryAfter}},
		{"reset-in-past", 200, ok("anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", "2025-06-01T11:59:00Z"),
			fbWant{0, true, 0, 50, 0, FromXRateLimit}},
	})

	fb := Parse(200, ok(), fbT0)
	var names []string
	for _, q := range fb.Quotas {
		names = append(names, q.Name+"/"+q.Unit)
	}
	if got, want := len(names), 4; got != want ||
		names[0] != "requests/requests" || names[1] != "tokens/tokens" ||
		names[2] != "input-tokens/tokens" || names[3] != "output-tokens/tokens" {
		t.Errorf("Parse(anthropic).Quotas names = %v, want requests, tokens, input-tokens, output-tokens", names)
	}
}

// TestParseResetValue checks the reset forms and the size rule that tells
// seconds from Unix seconds and Unix milliseconds.
func TestParseResetValue(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"delta-seconds", "30", 30 * time.Second, true},
		{"delta-zero", "0", 0, true},
		{"delta-decimal", "1.5", 1500 * time.Millisecond, true},
		{"delta-largest", "849999999", 849999999 * time.Second, true},
		{"unix-seconds-half-now", "850000000", 0, true},
		{"unix-seconds", "1700000042", 42 * time.Second, true},
		{"unix-seconds-decimal", "1700000001.25", 1250 * time.Millisecond, true},
		{"unix-seconds-past", "1699999000", 0, true},
		{"unix-seconds-smallest", "1000000000", 0, true},
		{"unix-milliseconds", "1700000042500", 42500 * time.Millisecond, true},
		{"unix-milliseconds-decimal", "1700000000000.5", 500 * time.Microsecond, true},
		{"unix-milliseconds-past", "1600000000000", 0, true},
		{"unix-huge", "99999999999999999999999999", math.MaxInt64, true},
		{"go-duration", "6m0s", 6 * time.Minute, true},
		{"go-duration-ms", "20ms", 20 * time.Millisecond, true},
		{"rfc3339", "2023-11-14T22:14:00Z", 40 * time.Second, true},
		{"http-date", "Tue, 14 Nov 2023 22:14:00 GMT", 40 * time.Second, true},
		{"negative", "-30", 0, false},
		{"garbage", "soon", 0, false},
		{"empty", "", 0, false},
		{"nan", "NaN", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseFeedbackReset(tt.value, now)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseFeedbackReset(%q, 1700000000) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestParseResetValueOnAnyClock checks that the size rule is measured against
// now, not fixed thresholds: under testing/synctest the clock starts in 2000,
// where a Unix reset (946684842) is below 1e9 and used to read as a 30-year
// delta.
func TestParseResetValueOnAnyClock(t *testing.T) {
	tests := []struct {
		name  string
		now   time.Time
		value string
		want  time.Duration
	}{
		{"synctest-delta", time.Unix(946_684_800, 0), "30", 30 * time.Second},
		{"synctest-unix-seconds", time.Unix(946_684_800, 0), "946684842", 42 * time.Second},
		{"synctest-unix-milliseconds", time.Unix(946_684_800, 0), "946684842500", 42500 * time.Millisecond},
		{"zero-time-delta", time.Time{}, "30", 30 * time.Second},
		{"unix-zero-clock-delta", time.Unix(0, 0), "999999999", 999999999 * time.Second},
		{"unix-zero-clock-seconds", time.Unix(0, 0), "1000000042", time.Duration(1000000042) * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseFeedbackReset(tt.value, tt.now)
			if !ok || got != tt.want {
				t.Errorf("parseFeedbackReset(%q, %v) = %v, %v; want %v, true", tt.value, tt.now.Unix(), got, ok, tt.want)
			}
		})
	}
}

// TestFeedbackCounts checks how counts are read: decimals (Reddit sends
// "599.0"), the first member for a limit, and the smallest member of every
// line for a remaining count.
func TestFeedbackCounts(t *testing.T) {
	tests := []struct {
		vals          []string
		first, least  int
		okFirst, okLe bool
	}{
		{[]string{"0"}, 0, 0, true, true},
		{[]string{"42"}, 42, 42, true, true},
		{[]string{" 7 "}, 7, 7, true, true},
		{[]string{"599.0"}, 599, 599, true, true}, // https://www.reddit.com/r/redditdev/comments/1yxrp7/formal_ratelimiting_headers/
		{[]string{"0.0"}, 0, 0, true, true},
		{[]string{"1.5"}, 1, 1, true, true},
		{[]string{"100, 100;w=60"}, 100, 100, true, true},
		{[]string{"100;w=60"}, 100, 100, true, true},
		{[]string{"991, 98"}, 991, 98, true, true},
		{[]string{"991", "98"}, 991, 98, true, true},
		{[]string{"x", "5, 3, junk"}, 5, 3, true, true},
		{[]string{"99999999999999999999999"}, math.MaxInt, math.MaxInt, true, true},
		{[]string{"-1"}, 0, 0, false, false},
		{[]string{"+1"}, 0, 0, false, false},
		{[]string{"1e3"}, 0, 0, false, false},
		{[]string{""}, 0, 0, false, false},
		{[]string{", 5"}, 0, 5, false, true},
		{[]string{"abc"}, 0, 0, false, false},
		{nil, 0, 0, false, false},
	}
	for _, tt := range tests {
		if got, ok := feedbackFirstCount(tt.vals); ok != tt.okFirst || got != tt.first {
			t.Errorf("feedbackFirstCount(%q) = %v, %v; want %v, %v", tt.vals, got, ok, tt.first, tt.okFirst)
		}
		if got, ok := feedbackRemaining(tt.vals); ok != tt.okLe || got != tt.least {
			t.Errorf("feedbackRemaining(%q) = %v, %v; want %v, %v", tt.vals, got, ok, tt.least, tt.okLe)
		}
	}
}
