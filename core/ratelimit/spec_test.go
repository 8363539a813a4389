package ratelimit

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Telegram Bot API: a request over the flood limits gets "429: Too Many
// Requests: retry after X", with ResponseParameters.retry_after, "the number
// of seconds left to wait before the request can be repeated", in the body.
// https://core.telegram.org/bots/api#responseparameters
// https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this
func TestProfileTelegram(t *testing.T) {
	runProfileCases(t, Telegram, []profileCase{
		{"flood-wait", 429, jsonHeader(),
			`{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 35","parameters":{"retry_after":35}}`,
			fbWant{35 * time.Second, true, -1, -1, -1, FromNone}, nil},
	})
}

// Google APIs: the Gemini API refuses with a 429 RESOURCE_EXHAUSTED whose
// details hold a google.rpc.RetryInfo retryDelay ("22s"); Drive refuses a
// user over the project's per-user quota with a 403 whose error reason is
// userRateLimitExceeded.
// https://ai.google.dev/gemini-api/docs/rate-limits
// https://cloud.google.com/apis/design/errors#error_details (RetryInfo)
// https://developers.google.com/workspace/drive/api/guides/handle-errors#resolve_a_403_error_user_rate_limit_exceeded
func TestProfileGoogle(t *testing.T) {
	runProfileCases(t, Google, []profileCase{
		{"gemini-retry-delay", 429, jsonHeader(), `{"error":{"code":429,
 "message":"You exceeded your current quota, please check your plan and billing details.",
 "status":"RESOURCE_EXHAUSTED","details":[
  {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"250"}]},
  {"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
  {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"22s"}]}}`,
			fbWant{22 * time.Second, true, -1, -1, -1, FromNone}, nil},
		{"drive-user-rate-limit", 403, jsonHeader(), `{"error":{"errors":[{"domain":"usageLimits",
 "reason":"userRateLimitExceeded","message":"User Rate Limit Exceeded. Rate of requests for user exceed configured project quota."}],
 "code":403,"message":"User Rate Limit Exceeded."}}`,
			fbWant{0, true, -1, -1, -1, FromNone}, nil},
	})
	if fb := Google.Parse(403, jsonHeader(), []byte(`{"error":{"errors":[{"reason":"insufficientFilePermissions"}],"code":403}}`), fbT0); fb.Exhausted {
		t.Errorf("a permission 403 read as a refusal: %+v", fb)
	}
}

// AWS: DynamoDB refuses a request over its throughput with a 400 whose
// JSON error type is ThrottlingException or
// ProvisionedThroughputExceededException; the AWS APIs' common error is
// Throttling.
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html
// https://docs.aws.amazon.com/general/latest/gr/api-retries.html
func TestProfileAWS(t *testing.T) {
	amz := fbHeader("Content-Type", "application/x-amz-json-1.0")
	runProfileCases(t, AWS, []profileCase{
		{"dynamodb-throttling", 400, amz,
			`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`,
			fbWant{0, true, -1, -1, -1, FromNone}, nil},
		{"dynamodb-provisioned", 400, amz,
			`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"You exceeded your maximum allowed provisioned throughput."}`,
			fbWant{0, true, -1, -1, -1, FromNone}, nil},
		{"query-api-xml", 400, fbHeader("Content-Type", "text/xml"),
			`<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>`,
			fbWant{0, true, -1, -1, -1, FromNone}, nil},
	})
	if fb := AWS.Parse(400, amz, []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException"}`), fbT0); fb.Exhausted {
		t.Errorf("a validation error read as a refusal: %+v", fb)
	}
}

// TestSpecSignalRules checks each rule a Signal follows, on a user
// profile: the flag or text marks a refusal; the body's wait wins unless a
// retry header decided; else the reset, else the default; at least MinWait;
// and nothing on a status the signal does not name.
func TestSpecSignalRules(t *testing.T) {
	p := mustProfile(Spec{Name: "acme", Signals: []Signal{
		{Statuses: []int{400}, Field: "code", Values: []string{"slow_down"}, Wait: "wait_ms",
			WaitEncoding: EncodingMilliseconds, UntilReset: true, DefaultWait: 3 * time.Second},
		{Statuses: []int{403}, Contains: []string{"Too Many"}, MinWait: time.Minute},
	}})
	for _, tt := range []struct {
		name   string
		status int
		h      []string
		body   string
		pause  time.Duration
		exh    bool
	}{
		{"flag-and-wait", 400, nil, `{"code":"slow_down","wait_ms":1500}`, 1500 * time.Millisecond, true},
		{"flag-no-wait-default", 400, nil, `{"code":"slow_down"}`, 3 * time.Second, true},
		{"flag-until-reset", 400, []string{"X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "7"}, `{"code":"slow_down"}`, 7 * time.Second, true},
		{"retry-header-wins", 400, []string{"Retry-After", "2"}, `{"code":"slow_down","wait_ms":9000}`, 2 * time.Second, true},
		{"other-flag", 400, nil, `{"code":"bad_input","wait_ms":1500}`, 0, false},
		{"text-any-case-min-wait", 403, []string{"Retry-After", "5"}, `too many requests`, time.Minute, true},
		{"status-not-named", 429, nil, `{"code":"slow_down","wait_ms":1500}`, 0, true},
		{"no-body", 400, nil, ``, 0, false},
	} {
		h := jsonHeader(tt.h...)
		fb := p.Parse(tt.status, h, []byte(tt.body), fbT0)
		if fb.Pause != tt.pause || fb.Exhausted != tt.exh {
			t.Errorf("%s: acme.Parse(%d, %v, %q) = pause %v, exhausted %v; want %v, %v",
				tt.name, tt.status, h, tt.body, fb.Pause, fb.Exhausted, tt.pause, tt.exh)
		}
	}
}

// TestSpecQuotas checks a user profile's header quotas in each encoding,
// the used/limit pair, a stated window, and that its headers are not also
// read by family.
func TestSpecQuotas(t *testing.T) {
	p := mustProfile(Spec{Name: "acme", RefusalStatuses: []int{420}, Quotas: []QuotaSpec{
		{Name: "second", Limit: "X-Acme-Ratelimit-Second", Remaining: "X-Acme-Ratelimit-Second-Left",
			Reset: "X-Acme-Reset-Ms", ResetEncoding: EncodingMilliseconds, Window: time.Second},
		{Name: "daily", Limit: "Acme-Max", Used: "Acme-Used", Reset: "Acme-Reset", ResetEncoding: EncodingUnix},
		{Name: "calls", UsedOfLimit: "Acme-Calls", WindowHeader: "Acme-Window", Rolling: true},
	}})
	h := fbHeader("X-Acme-Ratelimit-Second", "10", "X-Acme-Ratelimit-Second-Left", "0", "X-Acme-Reset-Ms", "250",
		"Acme-Max", "1000", "Acme-Used", "10", "Acme-Reset", fbUnixAt(time.Hour),
		"Acme-Calls", "30/40", "Acme-Window", "1m30s")
	fb := p.Parse(420, h, nil, fbT0)
	want := []Quota{
		{"second", "requests", 0, 10, 250 * time.Millisecond, time.Second},
		{"daily", "requests", 990, 1000, time.Hour, 0},
		{"calls", "requests", 10, 40, 90 * time.Second, 90 * time.Second},
	}
	if !reflect.DeepEqual(fb.Quotas, want) || fb.Pause != 250*time.Millisecond || !fb.Exhausted {
		t.Errorf("acme.Parse(420, %v)\n got %+v pause %v exhausted %v\nwant %+v pause 250ms exhausted", h, fb.Quotas, fb.Pause, fb.Exhausted, want)
	}
	if g := Parse(420, h, fbT0); len(g.Quotas) != 1 || g.Quotas[0].Window != time.Second {
		t.Errorf("generic Parse(420, %v).Quotas = %+v, want the one family quota the profile replaces", h, g.Quotas)
	}
}

// TestNewProfileRefuses checks that a Spec out of bounds is refused with
// an error that names the field.
func TestNewProfileRefuses(t *testing.T) {
	long := strings.Repeat("x", specMaxName+1)
	for _, tt := range []struct {
		s    Spec
		want string
	}{
		{Spec{}, "Name"},
		{Spec{Name: "a b"}, "Name"},
		{Spec{Name: "a", BodyBytes: profileMaxBody + 1}, "BodyBytes"},
		{Spec{Name: "a", RefusalStatuses: []int{200}}, "RefusalStatuses"},
		{Spec{Name: "a", Quotas: []QuotaSpec{{Limit: "X-Limit"}}}, "needs Remaining"},
		{Spec{Name: "a", Quotas: []QuotaSpec{{Remaining: "X Left"}}}, "header name"},
		{Spec{Name: "a", Quotas: []QuotaSpec{{Remaining: long}}}, "header name"},
		{Spec{Name: "a", Quotas: []QuotaSpec{{Remaining: "R", ResetEncoding: "fortnights"}}}, "encoding"},
		{Spec{Name: "a", Quotas: []QuotaSpec{{Remaining: "R", Window: -1}}}, "Window"},
		{Spec{Name: "a", Quotas: make([]QuotaSpec, specMaxQuotas+1)}, "at most"},
		{Spec{Name: "a", Signals: []Signal{{Contains: []string{"x"}}}}, "Statuses"},
		{Spec{Name: "a", Signals: []Signal{{Statuses: []int{429}}}}, "needs Contains"},
		{Spec{Name: "a", Signals: []Signal{{Statuses: []int{429}, Values: []string{"x"}}}}, "Values need a Field"},
		{Spec{Name: "a", Signals: []Signal{{Statuses: []int{429}, Field: `a"b`}}}, "JSON member"},
		{Spec{Name: "a", Signals: []Signal{{Statuses: []int{429}, Contains: []string{""}}}}, "Contains"},
		{Spec{Name: "a", Signals: []Signal{{Statuses: []int{429}, Wait: "w", MinWait: -1}}}, "negative"},
	} {
		_, err := NewProfile(tt.s)
		if !errors.Is(err, errSpec) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "headgate: ") {
			t.Errorf("NewProfile(%+v) error = %v, want one naming %q", tt.s, err, tt.want)
		}
	}
}

// TestLoadProfile checks the JSON form: it reads the same profile as the
// Spec written in Go, and refuses unknown members, bad durations and
// trailing text.
func TestLoadProfile(t *testing.T) {
	p, err := LoadProfile([]byte(`{
  "name": "bybit-as-json", "body_bytes": 256,
  "quotas": [{"limit": "X-Bapi-Limit", "remaining": "X-Bapi-Limit-Status",
    "reset": "X-Bapi-Limit-Reset-Timestamp", "reset_encoding": "unix-ms", "window": "1s"}],
  "signals": [
    {"statuses": [403], "contains": ["too frequent"], "min_wait": "10m"},
    {"statuses": [200], "field": "retCode", "values": ["10006", "10018"], "until_reset": true, "default_wait": "1s"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Bybit.Spec()
	want.Name = "bybit-as-json"
	if got := p.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("LoadProfile(…).Spec()\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{
		`{"name": "a", "colour": "red"}`,
		`{"name": "a", "quotas": [{"remaining": "R", "window": "soon"}]}`,
		`{"name": "a", "signals": [{"statuses": [429], "wait": "w", "default_wait": "1 minute"}]}`,
		`{"name": "a"} {"name": "b"}`,
		`{"name": "a b"}`,
		`[]`,
	} {
		if _, err := LoadProfile([]byte(bad)); !errors.Is(err, errSpec) {
			t.Errorf("LoadProfile(%s) error = %v, want a spec error", bad, err)
		}
	}
}
