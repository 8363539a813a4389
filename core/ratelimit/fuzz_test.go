package ratelimit

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds Parse arbitrary statuses and header blocks
// ("Name: value" lines) and checks what must hold for any input: it never
// panics, the pause is never negative, unknown numbers are -1 and never
// less, and the result does not change when the header names are re-cased
// (canonical, lower or upper case).
func FuzzParse(f *testing.F) {
	seeds := []struct {
		status int
		block  string
	}{
		{200, "Content-Type: text/plain\nDate: Sun, 01 Jun 2025 12:00:00 GMT"},
		{429, "Retry-After: 30"},
		{429, "Retry-After: 1.5\nretry-after-ms: 1500\nx-ms-retry-after-ms: 20.5"},
		{503, "Retry-After: Sun, 06 Nov 1994 08:49:37 GMT"},
		{503, "Retry-After: Sunday, 06-Nov-94 08:49:37 GMT"},
		{429, "Retry-After: Sun Nov  6 08:49:37 1994"},
		{403, "Retry-After: Sun, 6 Nov 2094 08:49:37.5 UTC"},
		{429, "Retry-After: -1\nRetry-After: NaN\nRetry-After: 99999999999999999999999"},
		{200, `RateLimit-Policy: "burst";q=100;w=60, "daily";q=1000;w=86400` + "\n" + `RateLimit: "burst";r=0;t=12, "daily";r=5;t=3600`},
		{200, `RateLimit-Policy: "b";q=10;qu="content-bytes"` + "\n" + `RateLimit: "b";r=0;t=12`},
		{200, `RateLimit: "a\"b";r=0;t=1.5;pk=:AAE=:, (x y);z, ?1, @17, %"a%20b"`},
		{200, "RateLimit: limit=100, remaining=0, reset=30\nRateLimit-Policy: 100;w=60"},
		{200, "RateLimit-Limit: 100, 100;w=60\nRateLimit-Remaining: 0\nRateLimit-Reset: 20"},
		{403, "X-RateLimit-Limit: 5000\nX-RateLimit-Remaining: 0\nX-RateLimit-Used: 5000\nX-RateLimit-Reset: 1748782800\nX-RateLimit-Resource: core"},
		{200, "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1748782800123\nX-RateLimit-Reset-After: 1.25"},
		{200, "X-Rate-Limit-Limit: 10000\nX-Rate-Limit-Remaining: 0\nX-Rate-Limit-Reset: 600000"},
		{200, "x-ratelimit-remaining-requests: 0\nx-ratelimit-reset-requests: 6m0s\nx-ratelimit-remaining-tokens: 10\nx-ratelimit-limit-tokens: 160000\nx-ratelimit-reset-tokens: 1h2m3.5s"},
		{200, "anthropic-ratelimit-tokens-remaining: 0\nanthropic-ratelimit-tokens-reset: 2025-06-01T12:00:30Z\nanthropic-ratelimit-output-tokens-remaining: 5"},
		{200, "X-RATELIMIT-REMAINING: 0\nx-ratelimit-reset: 30\nX-RateLimit-Reset: 40"},
		{200, "x-ratelimit-limit-requests-day: 1000\nx-ratelimit-remaining-requests-day: 0\nx-ratelimit-reset-requests-day: 33011.382867097855"},
		{429, "X-RateLimit-Tokens-Remaining: 0\nX-RateLimit-Tokens-Reset: 1748779230000\nx-ratelimit-reset-tokens-per-minute: 6m0s"},
		{200, "X-Ratelimit-Limit: 600,30000\nX-Ratelimit-Usage: 692,29300\nX-RateLimit-Reset: 5, 50"},
		{200, "X-Rate-Remaining: 5\nX-Remaining-Requests: 3\nX-Mbx-Used-Weight-1m: 6001"},
		{418, "Retry-After: 7200\nX-Sentry-Rate-Limit-ConcurrentLimit: 25\nX-Sentry-Rate-Limit-ConcurrentRemaining: 0"},
		{200, "X-Rate-Limit-Requests-Left: 0\nX-Rate-Limit-Requests-Quota: 150\nX-Rate-Limit-Time-Reset-Ms: 15000\nX-Rate-Limit-Time-Window-Ms: 30000"},
		{529, "Retry-After: 30\nX-Discogs-Ratelimit: 60\nX-Discogs-Ratelimit-Used: 61\nx-ratelimit-minute-limit: 10\nx-ratelimit-minute-remaining: 0"},
	}
	for _, s := range seeds {
		f.Add(s.status, s.block, fbT0.Unix())
	}
	f.Add(429, "Retry-After: 86400", int64(0))
	f.Add(200, "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 9999999999999999", int64(-1<<62))

	f.Fuzz(func(t *testing.T, status int, block string, nowUnix int64) {
		build := fuzzHeaders(block)
		now := time.Unix(nowUnix%(1<<40), 0)
		canonical := build(http.CanonicalHeaderKey)
		fb := Parse(status, canonical, now)
		checkFeedback(t, fb)

		for _, recase := range []func(string) string{fbASCIILower, fbASCIIUpper} {
			h := build(recase)
			if got := Parse(status, h, now); !reflect.DeepEqual(got, fb) {
				t.Fatalf("re-cased names changed the result:\n%v\n-> %+v\n%v\n-> %+v", canonical, fb, h, got)
			}
		}
		if again := Parse(status, canonical, now); !reflect.DeepEqual(again, fb) {
			t.Fatalf("second call differs: %+v then %+v", fb, again)
		}
		// No quota is invented: every quota comes from a header whose name
		// says "limit" (ratelimit, rate-limit, call-limit, limit-info), so
		// the others leave the quotas as they are.
		limitOnly := http.Header{}
		for k, vs := range canonical {
			if strings.Contains(strings.ToLower(k), "limit") {
				limitOnly[k] = vs
			}
		}
		if q := Parse(status, limitOnly, now).Quotas; !reflect.DeepEqual(q, fb.Quotas) {
			t.Fatalf("quotas from headers that say none:\n%v\n-> %+v\nlimit headers alone -> %+v", canonical, fb.Quotas, q)
		}
	})
}

// checkFeedback fails t when fb breaks a bound every Feedback must keep.
func checkFeedback(t *testing.T, fb Feedback) {
	t.Helper()
	if fb.Pause < 0 {
		t.Fatalf("Pause = %v, want >= 0", fb.Pause)
	}
	if fb.Remaining < -1 || fb.Limit < -1 || fb.Reset < -1 {
		t.Fatalf("Remaining, Limit, Reset = %d, %d, %v; want each >= -1", fb.Remaining, fb.Limit, fb.Reset)
	}
	if fb.Source > FromXRateLimit {
		t.Fatalf("Source = %v, want a defined source", fb.Source)
	}
	if most := feedbackMaxQuotas + profileMaxExtraQuotas; fb.Quotas != nil && (len(fb.Quotas) == 0 || len(fb.Quotas) > most) {
		t.Fatalf("len(Quotas) = %d, want nil or 1..%d", len(fb.Quotas), most)
	}
	for _, q := range fb.Quotas {
		if q.Remaining < -1 || q.Limit < -1 || q.Reset < -1 || q.Window < 0 {
			t.Fatalf("quota %+v has a number below its unknown value", q)
		}
	}
}

// fbASCIILower and fbASCIIUpper re-case header names as HTTP peers may: ASCII
// only (strings.ToUpper would turn "ſ" into "S" and make a new name).
func fbASCIILower(s string) string { return fbASCIIMap(s, 'A', 'Z', 'a'-'A') }
func fbASCIIUpper(s string) string { return fbASCIIMap(s, 'a', 'z', 'A'-'a') }

func fbASCIIMap(s string, lo, hi byte, delta int) string {
	b := []byte(s)
	for i, c := range b {
		if lo <= c && c <= hi {
			b[i] = byte(int(c) + delta)
		}
	}
	return string(b)
}

// FuzzProfileParse feeds every profile arbitrary statuses, header blocks
// and bodies, and checks the same bounds as FuzzParse: no panic, no
// negative pause, unknown numbers never below -1, the body prefix bounded,
// and the same answer on a second call and under re-cased header names.
func FuzzProfileParse(f *testing.F) {
	seeds := []struct {
		p      Profile
		status int
		block  string
		body   string
	}{
		{GitHub, 403, "X-RateLimit-Remaining: 4000\nContent-Type: application/json", `{"message":"You have exceeded a secondary rate limit."}`},
		{Atlassian, 200, `Beta-RateLimit: "q";r=0;t=2788` + "\n" + `Beta-RateLimit-Policy: "q";q=100;w=3600`, ""},
		{HubSpot, 429, "X-HubSpot-RateLimit-Interval-Milliseconds: 10000\nX-HubSpot-RateLimit-Max: 100\nX-HubSpot-RateLimit-Remaining: 0", ""},
		{Zendesk, 200, "zendesk-ratelimit-tickets-index: total=100; remaining=0; resets=41\nzendesk-ratelimit-b: remaining=1", ""},
		{Bybit, 200, "Content-Type: application/json\nX-Bapi-Limit-Status: 0\nX-Bapi-Limit-Reset-Timestamp: 1748779200800", `{"retCode":10006,"retMsg":"Too many visits!"}`},
		{Shopify, 200, "Content-Type: application/json", `{"errors":[{"extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{"requestedQueryCost":752,"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":666,"restoreRate":50.0}}}}`},
		{Shopify, 200, "Content-Type: application/json", `{"errors":"THROTTLED","requestedQueryCost":1e308,"currentlyAvailable":0,"maximumAvailable":99999999999999999999,"restoreRate":0.000000001}`},
		{Salesforce, 403, "Sforce-Limit-Info: api-usage=5000/5000", `[{"errorCode":"REQUEST_LIMIT_EXCEEDED"}]`},
		{Discord, 429, "X-RateLimit-Scope: shared\nX-RateLimit-Global: true", `{"retry_after": 64.57, "global": false}`},
		{OpenAI, 429, "Content-Type: application/json", `{"error":{"message":"Please try again in 1.8s.","code":"rate_limit_exceeded"}}`},
		{Anthropic, 529, "Retry-After: 4\nanthropic-priority-input-tokens-remaining: 0", ""},
		{GoogleMaps, 200, "Content-Type: application/json", `{"results" : [], "status" : "OVER_QUERY_LIMIT"}`},
		{Prisjakt, 429, "X-Rate-Limit-Remaining: 0\nX-Rate-Limit-Reset: 600000", ""},
		{Telegram, 429, "Content-Type: application/json", `{"ok":false,"error_code":429,"parameters":{"retry_after":5}}`},
		{Google, 429, "Content-Type: application/json", `{"error":{"code":429,"details":[{"retryDelay":"22s"}]}}`},
		{AWS, 400, "Content-Type: application/x-amz-json-1.0", `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}`},
		{fuzzProfiles[len(fuzzProfiles)-2], 420, "A-Left: 0\nA-Reset: 1748779200800\nB-Max: 10\nB-Used: 12\nB-Window: 1500\nC-Calls: 3/40\nC-Reset: 1m30s", ""},
		{fuzzProfiles[len(fuzzProfiles)-1], 200, "Content-Type: application/json", `{"code":"slow_down","wait_ms":1500.5}`},
	}
	for _, s := range seeds {
		f.Add(uint8(slices.Index(fuzzProfiles, s.p)), s.status, s.block, []byte(s.body), fbT0.Unix())
	}
	f.Fuzz(func(t *testing.T, pr uint8, status int, block string, body []byte, nowUnix int64) {
		p := fuzzProfiles[int(pr)%len(fuzzProfiles)] // every built-in profile and user-written ones
		build := fuzzHeaders(block)
		now := time.Unix(nowUnix%(1<<40), 0)
		canonical := build(http.CanonicalHeaderKey)
		if n := p.BodyPrefix(status, canonical); n < 0 || n > profileMaxBody {
			t.Fatalf("BodyPrefix = %d, want within [0, %d]", n, profileMaxBody)
		}
		fb := p.Parse(status, canonical, body, now)
		checkFeedback(t, fb)
		if again := p.Parse(status, canonical, body, now); !reflect.DeepEqual(again, fb) {
			t.Fatalf("second call differs: %+v then %+v", fb, again)
		}
		for _, recase := range []func(string) string{fbASCIILower, fbASCIIUpper} {
			if got := p.Parse(status, build(recase), body, now); !reflect.DeepEqual(got, fb) {
				t.Fatalf("re-cased names changed the result:\n-> %+v\n-> %+v", fb, got)
			}
		}
	})
}

// fuzzProfiles is every built-in profile and two user-written ones: one of
// vendor-named headers in every encoding, one of body signals.
var fuzzProfiles = append(slices.Clone(builtinProfiles),
	mustProfile(Spec{Name: "user-headers", Quotas: []QuotaSpec{
		{Name: "a", Limit: "A-Limit", Remaining: "A-Left", Reset: "A-Reset", ResetEncoding: EncodingUnixMilli},
		{Name: "b", Unit: "tokens", Limit: "B-Max", Used: "B-Used", Reset: "B-Reset", ResetEncoding: EncodingDate,
			WindowHeader: "B-Window", WindowEncoding: EncodingMilliseconds, Rolling: true},
		{Name: "c", UsedOfLimit: "C-Calls", Reset: "C-Reset", ResetEncoding: EncodingDuration},
	}, RefusalStatuses: []int{420}}),
	mustProfile(Spec{Name: "user-body", BodyBytes: 4096, Signals: []Signal{
		{Statuses: []int{200, 400, 429}, Field: "code", Values: []string{"slow_down"}, Wait: "wait_ms",
			WaitEncoding: EncodingMilliseconds, UntilReset: true, DefaultWait: time.Second},
		{Statuses: []int{403}, Contains: []string{"too many"}, MinWait: time.Minute, Wait: "until", WaitEncoding: EncodingUnix},
	}}),
)

// mustProfile is NewProfile for specs a test knows to be valid.
func mustProfile(s Spec) Profile {
	p, err := NewProfile(s)
	if err != nil {
		panic(err)
	}
	return p
}

// fuzzHeaders reads a fuzzed block of "Name: value" lines (at most 64) and
// returns a builder of the header they make, with each name passed through
// recase, so a target can compare one block under several casings.
func fuzzHeaders(block string) func(recase func(string) string) http.Header {
	var names, values []string
	for line := range strings.SplitSeq(block, "\n") {
		if len(names) == 64 {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			continue
		}
		names = append(names, name)
		values = append(values, strings.TrimLeft(value, " "))
	}
	return func(recase func(string) string) http.Header {
		h := http.Header{}
		for i, name := range names {
			k := recase(name)
			h[k] = append(h[k], values[i])
		}
		return h
	}
}
