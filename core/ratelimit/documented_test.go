package ratelimit

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// docCase is one response an API documents, read by the generic reader
// (issue 32): src is where the API documents it.
type docCase struct {
	name, src string
	status    int
	h         http.Header
	want      fbWant
	quotas    []Quota // checked when not nil; empty means none reported
}

// TestParseDocumented reads documented responses of APIs the first corpus
// did not hold: every naming family of issue 32 (dimension and window in
// the name, in either order; usage beside the limit; several windows in one
// field; resets in every encoding; concurrency beside a rate; vendor
// prefixes) and Retry-After on any refusal status.
func TestParseDocumented(t *testing.T) {
	q := func(name, unit string, remaining, limit int, reset, window time.Duration) Quota {
		return Quota{name, unit, remaining, limit, reset, window}
	}
	cerebrasDayReset := 33011*time.Second + 382867097*time.Nanosecond
	cerebrasMinReset := 11*time.Second + 382867097*time.Nanosecond
	groqReqReset := 2*time.Minute + 59560*time.Millisecond
	for _, c := range []docCase{
		{"cerebras", "https://inference-docs.cerebras.ai/support/rate-limits", 200, fbHeader(
			"x-ratelimit-limit-requests-day", "1000000000", "x-ratelimit-limit-tokens-minute", "1000000000",
			"x-ratelimit-remaining-requests-day", "999997455", "x-ratelimit-remaining-tokens-minute", "999998298",
			"x-ratelimit-reset-requests-day", "33011.382867097855", "x-ratelimit-reset-tokens-minute", "11.382867097854614"),
			fbWant{0, false, 999997455, 1000000000, cerebrasDayReset, FromXRateLimit},
			[]Quota{q("requests", "requests", 999997455, 1000000000, cerebrasDayReset, 24*time.Hour),
				q("tokens", "tokens", 999998298, 1000000000, cerebrasMinReset, time.Minute)}},
		{"cerebras-tokens-spent", "https://inference-docs.cerebras.ai/support/rate-limits", 429, fbHeader(
			"x-ratelimit-limit-tokens-minute", "60000", "x-ratelimit-remaining-tokens-minute", "0",
			"x-ratelimit-reset-tokens-minute", "11.382867097854614"),
			fbWant{cerebrasMinReset, true, 0, 60000, cerebrasMinReset, FromXRateLimit},
			[]Quota{q("tokens", "tokens", 0, 60000, cerebrasMinReset, time.Minute)}},
		{"strava", "https://developers.strava.com/docs/rate-limits/", 200, fbHeader(
			"X-Ratelimit-Limit", "600,30000", "X-Ratelimit-Usage", "314,27536"),
			fbWant{0, false, 2464, 30000, -1, FromXRateLimit},
			[]Quota{q("requests", "requests", 286, 600, -1, 0), q("requests", "requests", 2464, 30000, -1, 0)}},
		{"strava-429", "https://developers.strava.com/docs/rate-limits/", 429, fbHeader(
			"X-Ratelimit-Limit", "600,30000", "X-Ratelimit-Usage", "692,29300"),
			fbWant{0, true, 0, 600, -1, FromXRateLimit},
			[]Quota{q("requests", "requests", 0, 600, -1, 0), q("requests", "requests", 700, 30000, -1, 0)}},
		{"binance-418-ban", "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/limits", 418, fbHeader(
			"Retry-After", "7200", "X-Mbx-Used-Weight-1m", "6001"),
			fbWant{2 * time.Hour, true, -1, -1, -1, FromRetryAfter}, []Quota{}},
		{"anthropic-529-overload", "https://docs.anthropic.com/en/api/errors", 529, fbHeader(
			"Retry-After", "30", "Content-Type", "application/json"),
			fbWant{30 * time.Second, true, -1, -1, -1, FromRetryAfter}, []Quota{}},
		{"sentry-concurrency-binds", "https://docs.sentry.io/api/ratelimits/", 200, fbHeader(
			"X-Sentry-Rate-Limit-Limit", "40", "X-Sentry-Rate-Limit-Remaining", "39",
			"X-Sentry-Rate-Limit-Reset", fbUnixAt(time.Second),
			"X-Sentry-Rate-Limit-ConcurrentLimit", "25", "X-Sentry-Rate-Limit-ConcurrentRemaining", "0"),
			fbWant{0, true, 0, 25, -1, FromXRateLimit},
			[]Quota{q("concurrent-requests", "concurrent-requests", 0, 25, -1, 0),
				q("requests", "requests", 39, 40, time.Second, 0)}},
		{"sentry-rate-spent", "https://docs.sentry.io/api/ratelimits/", 429, fbHeader(
			"X-Sentry-Rate-Limit-Limit", "40", "X-Sentry-Rate-Limit-Remaining", "0",
			"X-Sentry-Rate-Limit-Reset", fbUnixAt(time.Second),
			"X-Sentry-Rate-Limit-ConcurrentLimit", "25", "X-Sentry-Rate-Limit-ConcurrentRemaining", "24"),
			fbWant{time.Second, true, 0, 40, time.Second, FromXRateLimit}, nil},
		{"connecteam-window-first", "https://developer.connecteam.com/docs/rate-limiting-1", 200, fbHeader(
			"x-ratelimit-minute-limit", "100", "x-ratelimit-minute-remaining", "99", "x-ratelimit-minute-reset", fbUnixAt(30*time.Second),
			"x-ratelimit-day-limit", "10000", "x-ratelimit-day-remaining", "9000", "x-ratelimit-day-reset", fbUnixAt(12*time.Hour)),
			fbWant{0, false, 9000, 10000, 12 * time.Hour, FromXRateLimit},
			[]Quota{q("requests", "requests", 9000, 10000, 12*time.Hour, 24*time.Hour),
				q("requests", "requests", 99, 100, 30*time.Second, time.Minute)}},
		{"connecteam-minute-spent", "https://developer.connecteam.com/docs/rate-limiting-1", 429, fbHeader(
			"x-ratelimit-minute-limit", "100", "x-ratelimit-minute-remaining", "0", "x-ratelimit-minute-reset", fbUnixAt(30*time.Second),
			"x-ratelimit-day-limit", "10000", "x-ratelimit-day-remaining", "9000", "x-ratelimit-day-reset", fbUnixAt(12*time.Hour)),
			fbWant{30 * time.Second, true, 0, 100, 30 * time.Second, FromXRateLimit}, nil},
		{"tomorrow-io-windows", "https://docs.tomorrow.io/reference/rate-limiting", 200, fbHeader(
			"X-RateLimit-Limit-second", "3", "X-RateLimit-Remaining-second", "2",
			"X-RateLimit-Limit-hour", "25", "X-RateLimit-Remaining-hour", "20",
			"X-RateLimit-Limit-day", "500", "X-RateLimit-Remaining-day", "400"),
			fbWant{0, false, 2, 3, -1, FromXRateLimit},
			[]Quota{q("requests", "requests", 400, 500, -1, 24*time.Hour), q("requests", "requests", 20, 25, -1, time.Hour),
				q("requests", "requests", 2, 3, -1, time.Second)}},
		{"linear-dimension-first", "https://linear.app/developers/rate-limiting", 200, fbHeader(
			"X-RateLimit-Requests-Limit", "5000", "X-RateLimit-Requests-Remaining", "4999", "X-RateLimit-Requests-Reset", msAt(time.Hour),
			"X-RateLimit-Complexity-Limit", "250000", "X-RateLimit-Complexity-Remaining", "240000",
			"X-RateLimit-Complexity-Reset", msAt(30*time.Second)),
			fbWant{0, false, 240000, 250000, 30 * time.Second, FromXRateLimit},
			[]Quota{q("complexity", "complexity", 240000, 250000, 30*time.Second, 0),
				q("requests", "requests", 4999, 5000, time.Hour, 0)}},
		{"mailerlite-retry-after-field", "https://developers-classic.mailerlite.com/docs/api-rate-limits", 429, fbHeader(
			"X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Retry-After", "45"),
			fbWant{45 * time.Second, true, 0, 60, 45 * time.Second, FromXRateLimit},
			[]Quota{q("requests", "requests", 0, 60, 45*time.Second, 0)}},
		{"azure-arm-subscription", "https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling", 200, fbHeader(
			"x-ms-ratelimit-remaining-subscription-reads", "11999", "x-ms-ratelimit-remaining-subscription-writes", "1199",
			"x-ms-ratelimit-remaining-resource", "Microsoft.Compute/GetVMScaleSet3Min;197,Microsoft.Compute/GetVMScaleSet30Min;1297"),
			fbWant{0, false, 1199, -1, -1, FromXRateLimit},
			[]Quota{q("subscription-reads", "requests", 11999, -1, -1, 0), q("subscription-writes", "requests", 1199, -1, -1, 0)}},
		{"bigcommerce-ms-window", "https://docs.bigcommerce.com/developer/docs/overview/api-fundamentals/rate-limits", 200, fbHeader(
			"X-Rate-Limit-Requests-Left", "35", "X-Rate-Limit-Requests-Quota", "150",
			"X-Rate-Limit-Time-Reset-Ms", "15000", "X-Rate-Limit-Time-Window-Ms", "30000"),
			fbWant{0, false, 35, 150, 15 * time.Second, FromXRateLimit},
			[]Quota{q("requests", "requests", 35, 150, 15*time.Second, 30*time.Second)}},
		{"bigcommerce-429", "https://docs.bigcommerce.com/developer/docs/overview/api-fundamentals/rate-limits", 429, fbHeader(
			"X-Rate-Limit-Requests-Left", "0", "X-Rate-Limit-Requests-Quota", "150",
			"X-Rate-Limit-Time-Reset-Ms", "15000", "X-Rate-Limit-Time-Window-Ms", "30000"),
			fbWant{15 * time.Second, true, 0, 150, 15 * time.Second, FromXRateLimit}, nil},
		{"datadog-period", "https://docs.datadoghq.com/api/latest/rate-limits/", 429, fbHeader(
			"X-RateLimit-Limit", "100", "X-RateLimit-Period", "60", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", "20", "X-RateLimit-Name", "metric_query"),
			fbWant{20 * time.Second, true, 0, 100, 20 * time.Second, FromXRateLimit},
			[]Quota{q("requests", "requests", 0, 100, 20*time.Second, time.Minute)}},
		{"mapbox-no-remaining-no-quota", "https://docs.mapbox.com/api/overview/#rate-limit-headers", 429, fbHeader(
			"X-Rate-Limit-Interval", "60", "X-Rate-Limit-Limit", "100000", "X-Rate-Limit-Reset", fbUnixAt(20*time.Second)),
			fbWant{0, true, -1, -1, -1, FromNone}, []Quota{}},
		{"groq", "https://console.groq.com/docs/rate-limits", 429, fbHeader(
			"retry-after", "2", "x-ratelimit-limit-requests", "14400", "x-ratelimit-limit-tokens", "18000",
			"x-ratelimit-remaining-requests", "14370", "x-ratelimit-remaining-tokens", "17997",
			"x-ratelimit-reset-requests", "2m59.56s", "x-ratelimit-reset-tokens", "7.66s"),
			fbWant{2 * time.Second, true, 14370, 14400, groqReqReset, FromRetryAfter},
			[]Quota{q("requests", "requests", 14370, 14400, groqReqReset, 0),
				q("tokens", "tokens", 17997, 18000, 7660*time.Millisecond, 0)}},
		{"discogs-bare-limit", "https://www.discogs.com/developers/#page:home,header:home-rate-limiting", 200, fbHeader(
			"X-Discogs-Ratelimit", "60", "X-Discogs-Ratelimit-Used", "1", "X-Discogs-Ratelimit-Remaining", "59"),
			fbWant{0, false, 59, 60, -1, FromXRateLimit}, []Quota{q("requests", "requests", 59, 60, -1, 0)}},
		{"discogs-used-alone", "https://www.discogs.com/developers/#page:home,header:home-rate-limiting", 429, fbHeader(
			"X-Discogs-Ratelimit", "60", "X-Discogs-Ratelimit-Used", "60"),
			fbWant{0, true, 0, 60, -1, FromXRateLimit}, []Quota{q("requests", "requests", 0, 60, -1, 0)}},
		{"persona", "https://docs.withpersona.com/reference/rate-limiting", 200, fbHeader(
			"ratelimit-limit", "300", "ratelimit-remaining", "280", "ratelimit-reset", "53"),
			fbWant{0, false, 280, 300, 53 * time.Second, FromRateLimit}, []Quota{q("requests", "requests", 280, 300, 53*time.Second, 0)}},
		{"freshdesk-total", "https://developers.freshdesk.com/api/#ratelimit", 200, fbHeader(
			"X-Ratelimit-Total", "400", "X-Ratelimit-Remaining", "374", "X-Ratelimit-Used-CurrentRequest", "1"),
			fbWant{0, false, 374, 400, -1, FromXRateLimit}, []Quota{q("requests", "requests", 374, 400, -1, 0)}},
		{"fastly-vendor-prefix", "https://www.fastly.com/documentation/reference/api/#rate-limiting", 200, fbHeader(
			"Fastly-RateLimit-Remaining", "999", "Fastly-RateLimit-Reset", fbUnixAt(time.Hour)),
			fbWant{0, false, 999, -1, time.Hour, FromXRateLimit}, []Quota{q("requests", "requests", 999, -1, time.Hour, 0)}},
		{"kong-response-ratelimiting", "https://docs.konghq.com/hub/kong-inc/response-ratelimiting/", 200, fbHeader(
			"X-RateLimit-Limit-Videos-Minute", "10", "X-RateLimit-Remaining-Videos-Minute", "9"),
			fbWant{0, false, 9, 10, -1, FromXRateLimit}, []Quota{q("videos", "requests", 9, 10, -1, time.Minute)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fb := Parse(c.status, c.h, fbT0)
			got := fbWant{fb.Pause, fb.Exhausted, fb.Remaining, fb.Limit, fb.Reset, fb.Source}
			quotasOK := c.quotas == nil || len(c.quotas) == 0 && fb.Quotas == nil || reflect.DeepEqual(fb.Quotas, c.quotas)
			if got != c.want || !quotasOK {
				t.Errorf("Parse(%d, %v, fbT0), documented at %s\n got %+v %+v\nwant %+v %+v",
					c.status, c.h, c.src, got, fb.Quotas, c.want, c.quotas)
			}
		})
	}
}
