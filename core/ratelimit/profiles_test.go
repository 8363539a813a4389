package ratelimit

import (
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// profileCase is one documented response of a provider, read with its
// profile.
type profileCase struct {
	name   string
	status int
	h      http.Header
	body   string
	want   fbWant
	quotas []Quota // checked when not nil
}

// runProfileCases reads every case with p at fbT0 (with the body prefix p
// asks for, as the Transport reads it), and checks that the generic reader
// alone would have read it differently, so every case shows what the
// profile adds.
func runProfileCases(t *testing.T, p Profile, cases []profileCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			body := []byte(c.body)
			if n := p.BodyPrefix(c.status, c.h); n < len(body) {
				body = body[:n]
			}
			fb := p.Parse(c.status, c.h, body, fbT0)
			got := fbWant{fb.Pause, fb.Exhausted, fb.Remaining, fb.Limit, fb.Reset, fb.Source}
			if got != c.want {
				t.Errorf("%v.Parse(%d, %v, %q, fbT0)\n got %+v\nwant %+v", p, c.status, c.h, body, got, c.want)
			}
			if c.quotas != nil && !reflect.DeepEqual(fb.Quotas, c.quotas) {
				t.Errorf("%v.Parse(%d, %v, %q, fbT0).Quotas\n got %+v\nwant %+v", p, c.status, c.h, body, fb.Quotas, c.quotas)
			}
			if generic := Parse(c.status, c.h, fbT0); reflect.DeepEqual(generic, fb) {
				t.Errorf("the generic reader reads this case as %v does: %+v", p, fb)
			}
		})
	}
}

// jsonHeader returns a header with a JSON Content-Type and kv added.
func jsonHeader(kv ...string) http.Header {
	return fbHeader(append([]string{"Content-Type", "application/json; charset=utf-8"}, kv...)...)
}

// GitHub: "If you exceed a secondary rate limit, you will receive a 403 or
// 429 response and an error message that indicates that you exceeded a
// secondary rate limit. If the retry-after response header is present, you
// should not retry your request until after that many seconds has elapsed.
// If the x-ratelimit-remaining header is 0, you should not retry your
// request until after the time ... specified by the x-ratelimit-reset
// header. Otherwise, wait for at least one minute before retrying."
// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
func TestProfileGitHub(t *testing.T) {
	const secondary = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/..."}`
	quota := []string{"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4000", "X-RateLimit-Reset", fbUnixAt(30 * time.Minute)}
	runProfileCases(t, GitHub, []profileCase{
		{"secondary-403-quota-left-waits-a-minute", 403, jsonHeader(quota...), secondary,
			fbWant{time.Minute, true, 4000, 5000, 30 * time.Minute, FromXRateLimit}, nil},
		{"secondary-429-no-headers", 429, jsonHeader(), secondary,
			fbWant{time.Minute, true, -1, -1, -1, FromNone}, nil},
	})
	// The generic levels already cover the other two documented cases, and
	// the profile leaves them alone.
	for _, c := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"retry-after-wins", jsonHeader(append(quota, "Retry-After", "7")...), 7 * time.Second},
		{"remaining-0-until-reset", jsonHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", fbUnixAt(20*time.Minute)), 20 * time.Minute},
	} {
		if got := GitHub.Parse(403, c.h, []byte(secondary), fbT0).Pause; got != c.want {
			t.Errorf("%s: pause = %v, want %v", c.name, got, c.want)
		}
	}
	// A 403 that is a permission denial is no throttle.
	denied := `{"message":"Resource not accessible by integration"}`
	if fb := GitHub.Parse(403, jsonHeader(quota...), []byte(denied), fbT0); fb.Exhausted || fb.Pause != 0 {
		t.Errorf("permission denial read as a throttle: %+v", fb)
	}
	if n := GitHub.BodyPrefix(200, jsonHeader()); n != 0 {
		t.Errorf("BodyPrefix(200) = %d, want 0: a 200 is not read", n)
	}
}

// Atlassian Jira Cloud sends its points quota in the IETF syntax under
// vendor names, beside per-second X-RateLimit headers, for example
// `Beta-RateLimit-Policy: "tenant-app-quota";q=100100;w=3600` and
// `Beta-RateLimit: "tenant-app-quota";r=0;t=2788`.
// https://developer.atlassian.com/cloud/jira/platform/rate-limiting
// https://community.developer.atlassian.com/t/2026-point-based-rate-limits/97828
func TestProfileAtlassian(t *testing.T) {
	policy := `"tenant-app-quota";q=100100;w=3600`
	runProfileCases(t, Atlassian, []profileCase{
		{"quota-left-beside-per-second", 200, fbHeader(
			"Beta-RateLimit-Policy", policy, "Beta-RateLimit", `"tenant-app-quota";r=17842;t=2107`,
			"X-RateLimit-Limit", "350", "X-RateLimit-Remaining", "349"),
			"", fbWant{0, false, 17842, 100100, 2107 * time.Second, FromXRateLimit},
			[]Quota{
				{"requests", "requests", 349, 350, -1, 0},
				{"tenant-app-quota", "requests", 17842, 100100, 2107 * time.Second, time.Hour},
			}},
		{"points-spent-pauses-until-reset", 200, fbHeader(
			"Beta-RateLimit", `"tenant-app-quota";r=0;t=2788`,
			"X-RateLimit-Limit", "400", "X-RateLimit-Remaining", "399"),
			"", fbWant{2788 * time.Second, true, 0, -1, 2788 * time.Second, FromXRateLimit}, nil},
		{"beta-only", 200, fbHeader("Beta-RateLimit-Policy", policy, "Beta-RateLimit", `"tenant-app-quota";r=5;t=60`),
			"", fbWant{0, false, 5, 100100, time.Minute, FromRateLimit}, nil},
	})
}

// HubSpot: "X-HubSpot-RateLimit-Daily", "-Daily-Remaining" (the day runs
// midnight to midnight in the account's time zone), "-Secondly",
// "-Secondly-Remaining"; and the rolling "X-HubSpot-RateLimit-Max",
// "-Remaining" and "-Interval-Milliseconds" (10000).
// https://developers.hubspot.com/changelog/2018-11-06-rate-limit-information-headers-will-be-included-in-http-responses
// https://developers.hubspot.com/docs/api/usage-details
func TestProfileHubSpot(t *testing.T) {
	runProfileCases(t, HubSpot, []profileCase{
		{"all-windows", 200, fbHeader(
			"X-HubSpot-RateLimit-Interval-Milliseconds", "10000",
			"X-HubSpot-RateLimit-Max", "110", "X-HubSpot-RateLimit-Remaining", "109",
			"X-HubSpot-RateLimit-Secondly", "11", "X-HubSpot-RateLimit-Secondly-Remaining", "2",
			"X-HubSpot-RateLimit-Daily", "500000", "X-HubSpot-RateLimit-Daily-Remaining", "499000"),
			"", fbWant{0, false, 2, 11, time.Second, FromXRateLimit},
			[]Quota{
				{"interval", "requests", 109, 110, 10 * time.Second, 10 * time.Second},
				{"secondly", "requests", 2, 11, time.Second, time.Second},
				{"daily", "requests", 499000, 500000, -1, 0},
			}},
		{"interval-spent", 429, fbHeader(
			"X-HubSpot-RateLimit-Interval-Milliseconds", "10000",
			"X-HubSpot-RateLimit-Max", "100", "X-HubSpot-RateLimit-Remaining", "0"),
			"", fbWant{10 * time.Second, true, 0, 100, 10 * time.Second, FromXRateLimit}, nil},
		{"daily-spent-no-reset", 429, fbHeader("X-HubSpot-RateLimit-Daily", "250000", "X-HubSpot-RateLimit-Daily-Remaining", "0"),
			"", fbWant{0, true, 0, 250000, -1, FromXRateLimit}, nil},
	})
}

// Zendesk: the List Tickets endpoint adds
// "zendesk-ratelimit-tickets-index: total=100; remaining=99; resets=41"
// beside the account-wide x-rate-limit and ratelimit-* headers.
// https://developer.zendesk.com/documentation/ticketing/using-the-zendesk-api/best-practices-for-avoiding-rate-limiting/
func TestProfileZendesk(t *testing.T) {
	account := []string{"x-rate-limit", "700", "ratelimit-limit", "700", "x-rate-limit-remaining", "699",
		"ratelimit-remaining", "699", "ratelimit-reset", "41"}
	runProfileCases(t, Zendesk, []profileCase{
		{"tickets-index-binds", 200, fbHeader(append(account, "zendesk-ratelimit-tickets-index", "total=100; remaining=99; resets=41")...),
			"", fbWant{0, false, 99, 100, 41 * time.Second, FromRateLimit},
			[]Quota{
				{"requests", "requests", 699, 700, 41 * time.Second, 0},
				{"tickets-index", "requests", 99, 100, 41 * time.Second, 0},
			}},
		{"tickets-index-spent", 429, fbHeader(append(account, "Zendesk-Ratelimit-Tickets-Index", "total=100; remaining=0; resets=41")...),
			"", fbWant{41 * time.Second, true, 0, 100, 41 * time.Second, FromRateLimit}, nil},
	})
	if fb := Zendesk.Parse(200, fbHeader("Zendesk-Ratelimit-X", "total=1; resets=2"), nil, fbT0); fb.Quotas != nil {
		t.Errorf("a quota without remaining was kept: %+v", fb.Quotas)
	}
}

// Bybit V5: "X-Bapi-Limit-Status - your remaining requests for current
// endpoint; X-Bapi-Limit - your current limit; X-Bapi-Limit-Reset-Timestamp
// - the timestamp indicating when your request limit resets if you have
// exceeded your rate_limit". "If you receive "retCode": 10006, "retMsg":
// "Too many visits!" in the JSON response, you have hit the API rate limit."
// "403, access too frequent ... wait for at least 10 minutes."
// https://bybit-exchange.github.io/docs/v5/rate-limit
func TestProfileBybit(t *testing.T) {
	runProfileCases(t, Bybit, []profileCase{
		{"headers", 200, jsonHeader("X-Bapi-Limit-Status", "99", "X-Bapi-Limit", "100", "X-Bapi-Limit-Reset-Timestamp", msAt(0)),
			`{"retCode":0,"retMsg":"OK","result":{}}`,
			fbWant{0, false, 99, 100, 0, FromXRateLimit}, nil},
		{"retcode-10006-200", 200, jsonHeader("X-Bapi-Limit-Status", "0", "X-Bapi-Limit", "100", "X-Bapi-Limit-Reset-Timestamp", msAt(800*time.Millisecond)),
			`{"retCode":10006,"retMsg":"Too many visits!","result":{},"retExtInfo":{},"time":1748779200000}`,
			fbWant{800 * time.Millisecond, true, 0, 100, 800 * time.Millisecond, FromXRateLimit}, nil},
		{"retcode-10006-no-headers-one-second", 200, jsonHeader(),
			`{"retCode":10006,"retMsg":"Too many visits!"}`,
			fbWant{time.Second, true, -1, -1, -1, FromNone}, nil},
		{"ip-ban-403", 403, fbHeader("Content-Type", "text/plain"), "403, access too frequent",
			fbWant{10 * time.Minute, true, -1, -1, -1, FromNone}, nil},
	})
	if fb := Bybit.Parse(200, jsonHeader(), []byte(`{"retCode":10001,"retMsg":"params error"}`), fbT0); fb.Exhausted {
		t.Errorf("retCode 10001 read as a throttle: %+v", fb)
	}
}

// msAt returns the Unix time in milliseconds d after fbT0.
func msAt(d time.Duration) string { return strconv.FormatInt(fbT0.Add(d).UnixMilli(), 10) }

// Shopify GraphQL Admin API: a throttled query answers
// {"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],
// "extensions":{"cost":{"requestedQueryCost":752,"actualQueryCost":null,
// "throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":666,
// "restoreRate":50.0}}}}; the bucket refills at restoreRate points per
// second.
// https://shopify.dev/docs/api/usage/limits
// https://community.shopify.com/t/throttled/254776
func TestProfileShopify(t *testing.T) {
	const throttled = `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}],"extensions":{"cost":{"requestedQueryCost":752,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":666,"restoreRate":50.0}}}}`
	runProfileCases(t, Shopify, []profileCase{
		{"graphql-throttled", 200, jsonHeader(), throttled,
			// (752-666)/50 = 1.72 s until the bucket holds the query's cost.
			fbWant{1720 * time.Millisecond, true, -1, -1, -1, FromNone},
			[]Quota{{"graphql-cost", "cost-points", 666, 1000, 6680 * time.Millisecond, 0}}},
		{"graphql-throttled-no-status", 200, jsonHeader(), `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}`,
			fbWant{0, true, -1, -1, -1, FromNone}, nil},
	})
	// REST is read generically, and the profile adds nothing to it.
	h := jsonHeader("X-Shopify-Shop-Api-Call-Limit", "40/40", "Retry-After", "2.0")
	if got, want := Shopify.Parse(429, h, []byte(`{"errors":"Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."}`), fbT0), Parse(429, h, fbT0); !reflect.DeepEqual(got, want) {
		t.Errorf("REST 429 with the profile = %+v, want the generic %+v", got, want)
	}
}

// Salesforce: "Sforce-Limit-Info" is read generically; a call past the
// 24-hour allocation is refused with 403 REQUEST_LIMIT_EXCEEDED
// ("TotalRequests Limit exceeded.").
// https://developer.salesforce.com/docs/atlas.en-us.214.0.api_rest.meta/api_rest/headers_api_usage.htm
// https://developer.salesforce.com/docs/atlas.en-us.salesforce_app_limits_cheatsheet.meta/salesforce_app_limits_cheatsheet/salesforce_app_limits_platform_api.htm
func TestProfileSalesforce(t *testing.T) {
	runProfileCases(t, Salesforce, []profileCase{
		{"request-limit-exceeded", 403, jsonHeader("Sforce-Limit-Info", "api-usage=4999/5000"),
			`[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]`,
			fbWant{0, true, 1, 5000, -1, FromXRateLimit}, nil},
	})
	if fb := Salesforce.Parse(403, jsonHeader(), []byte(`[{"errorCode":"INSUFFICIENT_ACCESS"}]`), fbT0); fb.Exhausted {
		t.Errorf("INSUFFICIENT_ACCESS read as a throttle: %+v", fb)
	}
}

// Discord: a 429 carries X-RateLimit-Scope ("user", "global" or "shared"),
// X-RateLimit-Global: true for the global limit, Retry-After, and a JSON
// body {"message": "You are being rate limited.", "retry_after": 64.57,
// "global": false}.
// https://docs.discord.com/developers/topics/rate-limits
// https://support-dev.discord.com/hc/en-us/articles/6223003921559-My-Bot-is-Being-Rate-Limited
func TestProfileDiscord(t *testing.T) {
	body := `{"message": "You are being rate limited.", "retry_after": 64.57, "global": false}`
	runProfileCases(t, Discord, []profileCase{
		{"body-retry-after", 429, jsonHeader("X-RateLimit-Scope", "user", "X-RateLimit-Bucket", "abcd1234"), body,
			fbWant{64570 * time.Millisecond, true, -1, -1, -1, FromNone},
			[]Quota{{"scope:user", "requests", 0, -1, 64570 * time.Millisecond, 0}}},
		{"global-header-wins", 429, jsonHeader("X-RateLimit-Global", "true", "X-RateLimit-Scope", "global", "Retry-After", "65"), body,
			fbWant{65 * time.Second, true, -1, -1, -1, FromRetryAfter},
			[]Quota{{"scope:global", "requests", 0, -1, 65 * time.Second, 0}}},
		{"shared-with-bucket-headers", 429, jsonHeader(
			"X-RateLimit-Scope", "shared", "X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "1.5"),
			`{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}`,
			fbWant{1500 * time.Millisecond, true, 0, 5, 1500 * time.Millisecond, FromXRateLimit},
			[]Quota{
				{"requests", "requests", 0, 5, 1500 * time.Millisecond, 0},
				{"scope:shared", "requests", 0, -1, 1500 * time.Millisecond, 0},
			}},
	})
}

// OpenAI: a 429's body names the limit: code rate_limit_exceeded, "Rate
// limit reached for gpt-4 ... on tokens per min (TPM): Limit 10000, Used
// 9800, Requested 500. Please try again in 1.8s.", or insufficient_quota,
// "You exceeded your current quota, please check your plan and billing
// details", which no wait restores.
// https://platform.openai.com/docs/guides/rate-limits
// https://platform.openai.com/docs/guides/error-codes/api-errors
func TestProfileOpenAI(t *testing.T) {
	runProfileCases(t, OpenAI, []profileCase{
		{"try-again-in", 429, jsonHeader("x-ratelimit-remaining-requests", "499"),
			`{"error":{"message":"Rate limit reached for gpt-4 in organization org-x on tokens per min (TPM): Limit 10000, Used 9800, Requested 500. Please try again in 1.8s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			fbWant{1800 * time.Millisecond, true, 499, -1, -1, FromXRateLimit}, nil},
		{"try-again-in-ms", 429, jsonHeader(),
			`{"error":{"message":"Rate limit reached for requests. Please try again in 6ms.","code":"rate_limit_exceeded"}}`,
			fbWant{6 * time.Millisecond, true, -1, -1, -1, FromNone}, nil},
		{"insufficient-quota-no-pause", 429, jsonHeader("Retry-After", "20"),
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			fbWant{0, true, -1, -1, -1, FromRetryAfter},
			[]Quota{{"billing", "credits", 0, -1, -1, 0}}},
	})
	h := jsonHeader("retry-after-ms", "250")
	if got := OpenAI.Parse(429, h, []byte(`{"error":{"message":"Please try again in 20s."}}`), fbT0).Pause; got != 250*time.Millisecond {
		t.Errorf("a header pause gave way to the body: %v, want 250ms", got)
	}
}

// Anthropic: Priority Tier adds anthropic-priority-input-tokens-* and
// anthropic-priority-output-tokens-* headers; a 529 overloaded_error is the
// API's overload, "not a limit on your account".
// https://docs.anthropic.com/en/api/rate-limits
// https://docs.anthropic.com/en/api/errors
func TestProfileAnthropic(t *testing.T) {
	runProfileCases(t, Anthropic, []profileCase{
		{"priority-tier", 200, fbHeader(
			"anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-requests-limit", "50",
			"anthropic-priority-input-tokens-limit", "10000", "anthropic-priority-input-tokens-remaining", "0",
			"anthropic-priority-input-tokens-reset", "2025-06-01T12:00:30Z"),
			"",
			fbWant{30 * time.Second, true, 0, 10000, 30 * time.Second, FromXRateLimit},
			[]Quota{
				{"requests", "requests", 49, 50, -1, 0},
				{"priority-input-tokens", "tokens", 0, 10000, 30 * time.Second, 0},
			}},
	})
}

// TestProfileBodyPrefix checks which responses a profile reads the body of:
// the statuses it names, a bounded prefix, never a stream.
func TestProfileBodyPrefix(t *testing.T) {
	sse := fbHeader("Content-Type", "text/event-stream")
	for _, tt := range []struct {
		p      Profile
		status int
		h      http.Header
		want   int
	}{
		{NoProfile, 429, jsonHeader(), 0},
		{GitHub, 403, jsonHeader(), 512},
		{GitHub, 200, jsonHeader(), 0},
		{Bybit, 200, jsonHeader(), 256},
		{Bybit, 200, fbHeader("Content-Type", "text/html"), 0},
		{Shopify, 200, jsonHeader(), 1024},
		{OpenAI, 429, jsonHeader(), 1024},
		{OpenAI, 429, sse, 0},
		{OpenAI, 200, sse, 0},
		{Atlassian, 429, jsonHeader(), 0},
	} {
		if got := tt.p.BodyPrefix(tt.status, tt.h); got != tt.want || got > profileMaxBody {
			t.Errorf("%v.BodyPrefix(%d, %v) = %d, want %d", tt.p, tt.status, tt.h, got, tt.want)
		}
	}
}

// builtinProfiles lists every built-in profile, NoProfile first.
var builtinProfiles = []Profile{NoProfile, GitHub, Atlassian, HubSpot, Zendesk, Bybit, Shopify,
	Salesforce, Discord, OpenAI, Anthropic, GoogleMaps, Prisjakt, Telegram, Google, AWS}

// TestProfileNames checks String: a unique name for every profile, and
// the name of its Spec.
func TestProfileNames(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range builtinProfiles {
		s := p.String()
		if s == "" || seen[s] {
			t.Errorf("%v.String() = %q, want a unique name", p.Spec().Name, s)
		}
		seen[s] = true
		if p != NoProfile && p.Spec().Name != s {
			t.Errorf("%v.Spec().Name = %q, want %q", p, p.Spec().Name, s)
		}
	}
	if got := NoProfile.String(); got != "none" {
		t.Errorf("NoProfile.String() = %q, want none", got)
	}
}

// TestProfileNoAllocs checks that a profile costs no allocation on a
// response with nothing to read (a plain 200), whichever it is, nor in
// deciding whether to read its body.
func TestProfileNoAllocs(t *testing.T) {
	h := jsonHeader("Date", "Sun, 01 Jun 2025 12:00:00 GMT", "X-Request-Id", "abc")
	for _, p := range builtinProfiles {
		if allocs := testing.AllocsPerRun(100, func() { p.Parse(200, h, nil, fbT0) }); allocs != 0 {
			t.Errorf("%v.Parse(plain 200) allocates %v times per call, want 0", p, allocs)
		}
		if allocs := testing.AllocsPerRun(100, func() { p.BodyPrefix(200, h) }); allocs != 0 {
			t.Errorf("%v.BodyPrefix(plain 200) allocates %v times per call, want 0", p, allocs)
		}
	}
}

// Google Maps Platform web services: over the quota, a 200 whose body says
// "status" : "OVER_QUERY_LIMIT".
// https://developers.google.com/maps/premium/optimize-web-services
// https://developers.google.com/maps/documentation/geocoding/requests-geocoding#StatusCodes
func TestProfileGoogleMaps(t *testing.T) {
	runProfileCases(t, GoogleMaps, []profileCase{
		{"over-query-limit", 200, jsonHeader(),
			`{
   "error_message" : "You have exceeded your rate-limit for this API.",
   "results" : [],
   "status" : "OVER_QUERY_LIMIT"
}`,
			fbWant{0, true, -1, -1, -1, FromNone}, nil},
	})
	if fb := GoogleMaps.Parse(200, jsonHeader(), []byte(`{"results":[],"status":"ZERO_RESULTS"}`), fbT0); fb.Exhausted {
		t.Errorf("ZERO_RESULTS read as a refusal: %+v", fb)
	}
}

// Prisjakt: "X-Rate-Limit-Reset: The time in milliseconds when the current
// rate limit window resets", for example "Status: 429 ... X-Rate-Limit-Limit:
// 10000, X-Rate-Limit-Remaining: 0, X-Rate-Limit-Reset: 600000".
// https://developer.prisjakt.nu/docs/sections/rate-limit
func TestProfilePrisjakt(t *testing.T) {
	runProfileCases(t, Prisjakt, []profileCase{
		{"spent-ten-minutes", 429, fbHeader("X-Rate-Limit-Limit", "10000", "X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", "600000"),
			"", fbWant{10 * time.Minute, true, 0, 10000, 10 * time.Minute, FromXRateLimit},
			[]Quota{{"requests", "requests", 0, 10000, 10 * time.Minute, 0}}},
		{"quota-left", 200, fbHeader("X-Rate-Limit-Limit", "10000", "X-Rate-Limit-Remaining", "9000", "X-Rate-Limit-Reset", "1500"),
			"", fbWant{0, false, 9000, 10000, 1500 * time.Millisecond, FromXRateLimit}, nil},
	})
	h := fbHeader("X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", "600000", "Retry-After", "30")
	if fb := Prisjakt.Parse(429, h, nil, fbT0); fb.Pause != 30*time.Second || fb.Reset != 10*time.Minute {
		t.Errorf("with Retry-After: pause %v, reset %v; want 30s (the header), 10m", fb.Pause, fb.Reset)
	}
}
