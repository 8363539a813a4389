package bench

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// feedbackCases are the responses a client sees most, with the ordinary
// headers a real API sends around the rate-limit ones.
func feedbackCases(now time.Time) []struct {
	name   string
	status int
	h      http.Header
} {
	ordinary := func(kv ...string) http.Header {
		h := http.Header{
			"Content-Type":              {"application/json; charset=utf-8"},
			"Content-Length":            {"1432"},
			"Date":                      {now.Format(http.TimeFormat)},
			"Server":                    {"nginx"},
			"Cache-Control":             {"private, max-age=60"},
			"Etag":                      {`W/"5d1f-abc"`},
			"Vary":                      {"Accept-Encoding"},
			"X-Request-Id":              {"4f1c2a9e-5b7d-4c1e-9a77-0d6f2b1c3e55"},
			"X-Content-Type-Options":    {"nosniff"},
			"Strict-Transport-Security": {"max-age=31536000"},
		}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	reset := now.Add(40 * time.Minute).Unix()
	return []struct {
		name   string
		status int
		h      http.Header
	}{
		{"plain-200", 200, ordinary()},
		{"github-200", 200, ordinary(
			"X-RateLimit-Limit", "5000",
			"X-RateLimit-Remaining", "4987",
			"X-RateLimit-Reset", strconv.FormatInt(reset, 10),
			"X-RateLimit-Used", "13",
			"X-RateLimit-Resource", "core",
		)},
		{"ietf-200", 200, ordinary(
			"RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`,
			"RateLimit", `"burst";r=57;t=12, "daily";r=640;t=30000`,
		)},
		{"openai-200", 200, ordinary(
			"X-Ratelimit-Limit-Requests", "10000",
			"X-Ratelimit-Remaining-Requests", "9999",
			"X-Ratelimit-Reset-Requests", "6ms",
			"X-Ratelimit-Limit-Tokens", "2000000",
			"X-Ratelimit-Remaining-Tokens", "1999412",
			"X-Ratelimit-Reset-Tokens", "17ms",
		)},
		{"retry-after-429", 429, ordinary("Retry-After", "30")},
		{"retry-after-date-503", 503, ordinary("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))},
		{"github-403", 403, ordinary(
			"Retry-After", "60",
			"X-RateLimit-Limit", "5000",
			"X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(reset, 10),
		)},
	}
}

// BenchmarkParseFeedback reads typical responses with ratelimit.Parse. Its
// name is the one bench/results records.
func BenchmarkParseFeedback(b *testing.B) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range feedbackCases(now) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkFeedback = ratelimit.Parse(c.status, c.h, now)
			}
		})
	}
}

var sinkFeedback ratelimit.Feedback

// TestFeedbackCases checks that each benchmarked response says what its
// name claims, so the benchmark measures the path it names.
func TestFeedbackCases(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	want := map[string]struct {
		source    ratelimit.Source
		exhausted bool
		pause     time.Duration
	}{
		"plain-200":            {ratelimit.FromNone, false, 0},
		"github-200":           {ratelimit.FromXRateLimit, false, 0},
		"ietf-200":             {ratelimit.FromRateLimit, false, 0},
		"openai-200":           {ratelimit.FromXRateLimit, false, 0},
		"retry-after-429":      {ratelimit.FromRetryAfter, true, 30 * time.Second},
		"retry-after-date-503": {ratelimit.FromRetryAfter, true, 90 * time.Second},
		"github-403":           {ratelimit.FromRetryAfter, true, 60 * time.Second},
	}
	for _, c := range feedbackCases(now) {
		f := ratelimit.Parse(c.status, c.h, now)
		w, ok := want[c.name]
		if !ok {
			t.Errorf("%s: no expectation", c.name)
			continue
		}
		if f.Source != w.source || f.Exhausted != w.exhausted || f.Pause != w.pause {
			t.Errorf("ratelimit.Parse(%s) = source %v, exhausted %v, pause %v; want %v, %v, %v",
				c.name, f.Source, f.Exhausted, f.Pause, w.source, w.exhausted, w.pause)
		}
	}
}
