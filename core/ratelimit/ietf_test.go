package ratelimit

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestParseIETF(t *testing.T) {
	policy := `"burst";q=100;w=60, "daily";q=1000;w=86400`
	runFeedbackCases(t, []feedbackCase{
		{"spent", 200, fbHeader("RateLimit-Policy", policy, "RateLimit", `"burst";r=0;t=12`),
			fbWant{12 * time.Second, true, 0, 100, 12 * time.Second, FromRateLimit}},
		{"spent-on-429", 429, fbHeader("RateLimit-Policy", policy, "RateLimit", `"burst";r=0;t=12`),
			fbWant{12 * time.Second, true, 0, 100, 12 * time.Second, FromRateLimit}},
		{"not-spent", 200, fbHeader("RateLimit-Policy", policy, "RateLimit", `"burst";r=50;t=30`),
			fbWant{0, false, 50, 100, 30 * time.Second, FromRateLimit}},
		{"binding-smallest-fraction", 200,
			fbHeader("RateLimit-Policy", policy, "RateLimit", `"burst";r=50;t=30, "daily";r=100;t=5000`),
			fbWant{0, false, 100, 1000, 5000 * time.Second, FromRateLimit}},
		{"binding-spent-over-fraction", 200,
			fbHeader("RateLimit-Policy", policy, "RateLimit", `"burst";r=0;t=30, "daily";r=1;t=5000`),
			fbWant{30 * time.Second, true, 0, 100, 30 * time.Second, FromRateLimit}},
		{"binding-lowest-remaining-without-limit", 200,
			fbHeader("RateLimit", `"a";r=9;t=1, "b";r=4;t=2, "c";r=7;t=3`),
			fbWant{0, false, 4, -1, 2 * time.Second, FromRateLimit}},
		{"several-spent-longest-t", 200,
			fbHeader("RateLimit-Policy", policy, "RateLimit", `"burst";r=0;t=30, "daily";r=0;t=600`),
			fbWant{600 * time.Second, true, 0, 1000, 600 * time.Second, FromRateLimit}},
		{"spent-without-t", 200, fbHeader("RateLimit-Policy", policy, "RateLimit", `"burst";r=0`),
			fbWant{0, true, 0, 100, -1, FromRateLimit}},
		{"spent-without-t-429", 429, fbHeader("RateLimit", `"burst";r=0`),
			fbWant{0, true, 0, -1, -1, FromRateLimit}},
		{"spent-without-t-beside-one-with-t", 200, fbHeader("RateLimit", `"a";r=0, "b";r=0;t=7`),
			fbWant{7 * time.Second, true, 0, -1, 7 * time.Second, FromRateLimit}},
		{"token-names", 200, fbHeader("RateLimit-Policy", "burst;q=10;w=1", "RateLimit", "burst;r=0;t=5"),
			fbWant{5 * time.Second, true, 0, 10, 5 * time.Second, FromRateLimit}},
		{"token-links-to-string", 200, fbHeader("RateLimit-Policy", `"burst";q=10`, "RateLimit", "burst;r=2;t=5"),
			fbWant{0, false, 2, 10, 5 * time.Second, FromRateLimit}},
		{"escaped-name", 200, fbHeader("RateLimit-Policy", `"a\"b";q=10`, "RateLimit", `"a\"b";r=3`),
			fbWant{0, false, 3, 10, -1, FromRateLimit}},
		{"no-policy-field", 200, fbHeader("RateLimit", `"burst";r=0;t=12`),
			fbWant{12 * time.Second, true, 0, -1, 12 * time.Second, FromRateLimit}},
		{"unlisted-policy-is-requests", 200, fbHeader("RateLimit-Policy", policy, "RateLimit", `"hourly";r=0;t=9`),
			fbWant{9 * time.Second, true, 0, -1, 9 * time.Second, FromRateLimit}},
		{"malformed-policy-items-stand-alone", 200, fbHeader("RateLimit-Policy", `"burst";q=`, "RateLimit", `"burst";r=0;t=4`),
			fbWant{4 * time.Second, true, 0, -1, 4 * time.Second, FromRateLimit}},
		{"content-bytes-skipped", 200,
			fbHeader("RateLimit-Policy", `"b";q=1000;qu="content-bytes"`, "RateLimit", `"b";r=0;t=30`),
			fbWant{0, false, -1, -1, -1, FromRateLimit}},
		{"concurrency-skipped-requests-kept", 200,
			fbHeader("RateLimit-Policy", `"c";q=5;qu="concurrency", "r";q=100`, "RateLimit", `"c";r=0;t=3, "r";r=40;t=8`),
			fbWant{0, false, 40, 100, 8 * time.Second, FromRateLimit}},
		{"unit-request", 200, fbHeader("RateLimit-Policy", `"p";q=10;qu="request"`, "RateLimit", `"p";r=0;t=3`),
			fbWant{3 * time.Second, true, 0, 10, 3 * time.Second, FromRateLimit}},
		{"unit-requests-token", 200, fbHeader("RateLimit-Policy", `p;q=10;qu=requests`, "RateLimit", `p;r=0;t=3`),
			fbWant{3 * time.Second, true, 0, 10, 3 * time.Second, FromRateLimit}},
		{"decimal-t", 200, fbHeader("RateLimit", `p;r=0;t=1.5`),
			fbWant{1500 * time.Millisecond, true, 0, -1, 1500 * time.Millisecond, FromRateLimit}},
		{"negative-t-is-unknown", 200, fbHeader("RateLimit", `p;r=0;t=-4`),
			fbWant{0, true, 0, -1, -1, FromRateLimit}},
		{"decimal-r-is-invalid", 200, fbHeader("RateLimit", `p;r=0.0;t=4`), fbUnknown},
		{"negative-r-is-invalid", 200, fbHeader("RateLimit", `p;r=-1;t=4`), fbUnknown},
		{"missing-r-is-invalid", 200, fbHeader("RateLimit", `p;t=4`), fbUnknown},
		{"string-r-is-invalid", 200, fbHeader("RateLimit", `p;r="0";t=4`), fbUnknown},
		{"integer-item-is-ignored", 200, fbHeader("RateLimit", `5;r=0;t=4, p;r=2`),
			fbWant{0, false, 2, -1, -1, FromRateLimit}},
		{"inner-list-ignored", 200, fbHeader("RateLimit", `(a b);r=0;t=4, p;r=2`),
			fbWant{0, false, 2, -1, -1, FromRateLimit}},
		{"repeated-param-last-wins", 200, fbHeader("RateLimit", `p;r=0;t=4;r=6`),
			fbWant{0, false, 6, -1, 4 * time.Second, FromRateLimit}},
		{"other-params-and-types", 200,
			fbHeader("RateLimit-Policy", `"p";q=100;w=60;pk=:cHsdsRa894==:;x=?1;y=@1700000000;z=%"caf%c3%a9";v`,
				"RateLimit", `"p";r=0;t=9;pk=:cHsdsRa894==:`),
			fbWant{9 * time.Second, true, 0, 100, 9 * time.Second, FromRateLimit}},
		{"ows", 200, fbHeader("RateLimit", " \t\"a\";r=5;t=1 ,\t\"b\";r=0;t=2 "),
			fbWant{2 * time.Second, true, 0, -1, 2 * time.Second, FromRateLimit}},
		{"field-lines-joined", 200, fbHeader("RateLimit", `"a";r=5;t=1`, "RateLimit", `"b";r=0;t=9`),
			fbWant{9 * time.Second, true, 0, -1, 9 * time.Second, FromRateLimit}},
		{"policy-lines-joined", 200, fbHeader("RateLimit-Policy", `"a";q=10`, "RateLimit-Policy", `"b";q=20`, "RateLimit", `"b";r=1`),
			fbWant{0, false, 1, 20, -1, FromRateLimit}},
		{"empty-field-line-is-malformed", 200, fbHeader("RateLimit", `"a";r=0;t=1`, "RateLimit", ``), fbUnknown},
		{"huge-integer-is-malformed", 200, fbHeader("RateLimit", `p;r=0;t=1234567890123456`), fbUnknown},
		{"trailing-comma", 200, fbHeader("RateLimit", `p;r=0;t=1,`), fbUnknown},
		{"unterminated-string", 200, fbHeader("RateLimit", `"p;r=0;t=1`), fbUnknown},
		{"bad-escape", 200, fbHeader("RateLimit", `"p\n";r=0;t=1`), fbUnknown},
		{"upper-case-key", 200, fbHeader("RateLimit", `p;R=0;T=1`), fbUnknown},
		{"empty-field", 200, fbHeader("RateLimit", ``), fbUnknown},
		{"draft-07-dictionary", 200,
			fbHeader("RateLimit-Policy", "100;w=60", "RateLimit", "limit=100, remaining=0, reset=30"),
			fbWant{30 * time.Second, true, 0, 100, 30 * time.Second, FromRateLimit}},
		{"draft-07-dictionary-not-spent", 200, fbHeader("RateLimit", "limit=100, remaining=99, reset=30"),
			fbWant{0, false, 99, 100, 30 * time.Second, FromRateLimit}},
		{"draft-07-dictionary-last-key-wins", 200, fbHeader("RateLimit", "remaining=0, reset=30, remaining=4"),
			fbWant{0, false, 4, -1, 30 * time.Second, FromRateLimit}},
		{"huge-t-saturates", 200, fbHeader("RateLimit", `p;r=0;t=999999999999999`),
			fbWant{math.MaxInt64, true, 0, -1, math.MaxInt64, FromRateLimit}},
		{"draft-07-dictionary-without-remaining", 200, fbHeader("RateLimit", "limit=100, reset=30"), fbUnknown},
		{"older-trio", 200,
			fbHeader("RateLimit-Limit", "100, 100;w=60", "RateLimit-Remaining", "0", "RateLimit-Reset", "20"),
			fbWant{20 * time.Second, true, 0, 100, 20 * time.Second, FromRateLimit}},
		{"older-trio-unix-reset", 200,
			fbHeader("RateLimit-Limit", "60", "RateLimit-Remaining", "0", "RateLimit-Reset", fbUnixAt(40*time.Second)),
			fbWant{40 * time.Second, true, 0, 60, 40 * time.Second, FromRateLimit}},
		{"older-trio-not-spent", 200, fbHeader("RateLimit-Remaining", "7"),
			fbWant{0, false, 7, -1, -1, FromRateLimit}},
		{"older-trio-without-remaining", 200, fbHeader("RateLimit-Limit", "100", "RateLimit-Reset", "20"), fbUnknown},
		{"structured-beats-trio", 200, fbHeader("RateLimit", `p;r=3`, "RateLimit-Remaining", "0", "RateLimit-Reset", "20"),
			fbWant{0, false, 3, -1, -1, FromRateLimit}},
		{"malformed-structured-falls-to-trio", 200, fbHeader("RateLimit", `p;r=`, "RateLimit-Remaining", "0", "RateLimit-Reset", "20"),
			fbWant{20 * time.Second, true, 0, -1, 20 * time.Second, FromRateLimit}},
	})
}

// TestParseIETFQuotaNames checks that quota names are unescaped
// and that units and windows come from the linked policy.
func TestParseIETFQuotaNames(t *testing.T) {
	fb := Parse(200, fbHeader(
		"RateLimit-Policy", `"a\"b\\c";q=10;w=1.5;qu="Content-Bytes"`,
		"RateLimit", `"a\"b\\c";r=3`), fbT0)
	want := Quota{Name: `a"b\c`, Unit: "Content-Bytes", Remaining: 3, Limit: 10, Reset: -1, Window: 1500 * time.Millisecond}
	if len(fb.Quotas) != 1 || fb.Quotas[0] != want {
		t.Errorf("Parse(escaped policy name).Quotas = %+v, want [%+v]", fb.Quotas, want)
	}
}

// TestParseIETFHandBuiltKeys checks that structured fields are found
// under non-canonical keys too.
func TestParseIETFHandBuiltKeys(t *testing.T) {
	h := http.Header{"ratelimit-policy": {`"p";q=10`}, "RATELIMIT": {`"p";r=0;t=3`}}
	fb := Parse(200, h, fbT0)
	if fb.Pause != 3*time.Second || fb.Limit != 10 || fb.Source != FromRateLimit {
		t.Errorf("Parse(200, %v, fbT0) = %+v, want a 3s pause with limit 10 from ratelimit", h, fb)
	}
}
