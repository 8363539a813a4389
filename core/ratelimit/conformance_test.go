package ratelimit

import (
	"reflect"
	"testing"
	"time"
)

// TestParseConformance holds the documented responses of real APIs
// that the generic reader must read (issue 17), each with its source.
func TestParseConformance(t *testing.T) {
	runFeedbackCases(t, []feedbackCase{
		// Shopify REST Admin API: "X-Shopify-Shop-Api-Call-Limit: 32/40" is
		// 32 calls used of a bucket of 40; a 429 carries "Retry-After: 2.0".
		// https://shopify.dev/docs/api/admin-rest/usage/rate-limits
		{"shopify-call-limit", 200, fbHeader("X-Shopify-Shop-Api-Call-Limit", "32/40"),
			fbWant{0, false, 8, 40, -1, FromXRateLimit}},
		{"shopify-bucket-full", 200, fbHeader("X-Shopify-Shop-Api-Call-Limit", "40/40"),
			fbWant{0, true, 0, 40, -1, FromXRateLimit}},
		{"shopify-429-decimal-retry-after", 429, fbHeader("X-Shopify-Shop-Api-Call-Limit", "40/40", "Retry-After", "2.0"),
			fbWant{2 * time.Second, true, 0, 40, -1, FromRetryAfter}},
		{"shopify-garbage-call-limit", 200, fbHeader("X-Shopify-Shop-Api-Call-Limit", "32 of 40"), fbUnknown},

		// Salesforce REST API: "Sforce-Limit-Info: api-usage=18/5000", and
		// with a connected app's quota "api-usage=25/5000;
		// per-app-api-usage=17/250(appName=sample-connected-app)".
		// https://developer.salesforce.com/docs/atlas.en-us.214.0.api_rest.meta/api_rest/headers_api_usage.htm
		{"salesforce-api-usage", 200, fbHeader("Sforce-Limit-Info", "api-usage=18/5000"),
			fbWant{0, false, 4982, 5000, -1, FromXRateLimit}},
		{"salesforce-per-app-binds", 200, fbHeader("Sforce-Limit-Info", "api-usage=25/5000; per-app-api-usage=17/250(appName=sample-connected-app)"),
			fbWant{0, false, 233, 250, -1, FromXRateLimit}},
		{"salesforce-spent", 200, fbHeader("Sforce-Limit-Info", "api-usage=5001/5000"),
			fbWant{0, true, 0, 5000, -1, FromXRateLimit}},

		// Zendesk: "X-Rate-Limit: 700" is the limit, with no -Limit suffix,
		// beside "X-Rate-Limit-Remaining: 699".
		// https://developer.zendesk.com/documentation/ticketing/using-the-zendesk-api/best-practices-for-avoiding-rate-limiting/
		{"zendesk-x-rate-limit", 200, fbHeader("X-Rate-Limit", "700", "X-Rate-Limit-Remaining", "699"),
			fbWant{0, false, 699, 700, -1, FromXRateLimit}},
		{"zendesk-429", 429, fbHeader("X-Rate-Limit", "700", "X-Rate-Limit-Remaining", "0", "Retry-After", "93"),
			fbWant{93 * time.Second, true, 0, 700, -1, FromRetryAfter}},

		// RFC 9110 section 15.6.4: a 503 may carry Retry-After. One whose
		// value does not parse is an error page on the way (a proxy, a load
		// balancer), not a quota: not Exhausted.
		{"503-garbage-retry-after", 503, fbHeader("Retry-After", "soon"),
			fbWant{0, false, -1, -1, -1, FromNone}},
		{"503-garbage-retry-after-ms", 503, fbHeader("retry-after-ms", "-5"),
			fbWant{0, false, -1, -1, -1, FromNone}},
		{"503-valid-retry-after", 503, fbHeader("Retry-After", "soon", "Retry-After", "7"),
			fbWant{7 * time.Second, true, -1, -1, -1, FromRetryAfter}},
		{"503-no-retry-after", 503, fbHeader("Content-Type", "text/html"),
			fbWant{0, true, -1, -1, -1, FromNone}},
		{"503-garbage-retry-after-spent-quota", 503, fbHeader("Retry-After", "soon", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "4"),
			fbWant{4 * time.Second, true, 0, -1, 4 * time.Second, FromXRateLimit}},
		{"429-garbage-retry-after-still-exhausted", 429, fbHeader("Retry-After", "soon"),
			fbWant{0, true, -1, -1, -1, FromNone}},
	})
}

// TestParseQuotaUnits checks that IETF quotas in units other than
// requests are reported in their own unit, in Quotas, and never pause the
// requests budget: the budget decides what to do with them (a dimension of
// that name shapes them). Units from draft-ietf-httpapi-ratelimit-headers:
// https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/
func TestParseQuotaUnits(t *testing.T) {
	tests := []struct {
		name  string
		h     []string
		want  []Quota
		top   fbWant
		quota int
	}{
		{"content-bytes-only",
			[]string{"RateLimit-Policy", `"b";q=65536;qu="content-bytes";w=10`, "RateLimit", `"b";r=0;t=4`},
			[]Quota{{"b", "content-bytes", 0, 65536, 4 * time.Second, 10 * time.Second}},
			fbWant{0, false, -1, -1, -1, FromRateLimit}, 1},
		{"concurrent-requests-beside-requests",
			[]string{"RateLimit-Policy", `"c";q=10;qu="concurrent-requests", "r";q=100;w=60`, "RateLimit", `"c";r=0, "r";r=40;t=30`},
			[]Quota{
				{"c", "concurrent-requests", 0, 10, -1, 0},
				{"r", "requests", 40, 100, 30 * time.Second, time.Minute},
			},
			fbWant{0, false, 40, 100, 30 * time.Second, FromRateLimit}, 2},
	}
	for _, tt := range tests {
		fb := Parse(200, fbHeader(tt.h...), fbT0)
		got := fbWant{fb.Pause, fb.Exhausted, fb.Remaining, fb.Limit, fb.Reset, fb.Source}
		if got != tt.top || !reflect.DeepEqual(fb.Quotas, tt.want) {
			t.Errorf("%s: Parse(200, %q)\n got %+v %+v\nwant %+v %+v", tt.name, tt.h, got, fb.Quotas, tt.top, tt.want)
		}
	}
}
