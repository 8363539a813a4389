package ratelimit

import (
	"net/http"
	"testing"
	"time"
)

// BenchmarkParse measures the parser on the responses a budget sees
// most: a plain 200 with ordinary headers (the hot path, 0 allocs/op), a 200
// with GitHub-style X-RateLimit headers, a 200 with IETF RateLimit fields and
// a 429 with Retry-After; and a plain 200 read with a profile.
func BenchmarkParse(b *testing.B) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ordinary := func() http.Header {
		return http.Header{
			"Content-Type":              {"application/json; charset=utf-8"},
			"Content-Length":            {"1432"},
			"Date":                      {"Sun, 01 Jun 2025 12:00:00 GMT"},
			"Server":                    {"nginx"},
			"Cache-Control":             {"private, max-age=60"},
			"Etag":                      {`W/"5d1f-abc"`},
			"Vary":                      {"Accept-Encoding"},
			"X-Request-Id":              {"4f1c2a9e-5b7d-4c1e-9a77-0d6f2b1c3e55"},
			"X-Content-Type-Options":    {"nosniff"},
			"Strict-Transport-Security": {"max-age=31536000"},
		}
	}
	with := func(kv ...string) http.Header {
		h := ordinary()
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	cases := []struct {
		name   string
		status int
		h      http.Header
	}{
		{"plain-200", 200, ordinary()},
		{"x-ratelimit-200", 200, with(
			"X-RateLimit-Limit", "5000",
			"X-RateLimit-Remaining", "4987",
			"X-RateLimit-Reset", "1748782800",
			"X-RateLimit-Used", "13",
			"X-RateLimit-Resource", "core",
		)},
		{"ietf-200", 200, with(
			"RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`,
			"RateLimit", `"burst";r=57;t=12, "daily";r=640;t=30000`,
		)},
		{"retry-after-429", 429, with("Retry-After", "30")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchFeedback = Parse(c.status, c.h, now)
			}
		})
	}
	// With a profile: a plain 200 still allocates nothing.
	b.Run("plain-200-profile-hubspot", func(b *testing.B) {
		h := ordinary()
		b.ReportAllocs()
		for b.Loop() {
			benchFeedback = HubSpot.Parse(200, h, nil, now)
		}
	})
}

// benchFeedback keeps the benchmarked calls from being optimized away.
var benchFeedback Feedback
