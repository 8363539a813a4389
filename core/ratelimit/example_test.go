package ratelimit_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// ExampleParse reads the feedback of a few typical responses, as
// seen at the instant their heads arrived.
func ExampleParse() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	show := func(what string, status int, h http.Header) {
		fb := ratelimit.Parse(status, h, now)
		reset := "unknown"
		if fb.Reset >= 0 {
			reset = fb.Reset.String()
		}
		fmt.Printf("%-11s %-11s pause=%-5v exhausted=%-5v remaining=%d limit=%d reset=%s\n",
			what, fb.Source, fb.Pause, fb.Exhausted, fb.Remaining, fb.Limit, reset)
	}

	show("plain 200", 200, http.Header{"Content-Type": {"application/json"}})

	show("429", 429, http.Header{"Retry-After": {"Sun, 01 Jun 2025 12:00:30 GMT"}})

	ietf := http.Header{}
	ietf.Set("RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`)
	ietf.Set("RateLimit", `"burst";r=0;t=12, "daily";r=640;t=30000`)
	show("IETF spent", 200, ietf)

	github := http.Header{}
	github.Set("X-RateLimit-Limit", "5000")
	github.Set("X-RateLimit-Remaining", "0")
	github.Set("X-RateLimit-Reset", fmt.Sprint(now.Add(25*time.Minute).Unix()))
	show("GitHub 403", 403, github)

	openai := http.Header{}
	openai.Set("x-ratelimit-limit-requests", "5000")
	openai.Set("x-ratelimit-remaining-requests", "4999")
	openai.Set("x-ratelimit-reset-requests", "12ms")
	openai.Set("x-ratelimit-limit-tokens", "160000")
	openai.Set("x-ratelimit-remaining-tokens", "1200")
	openai.Set("x-ratelimit-reset-tokens", "6m0s")
	show("OpenAI 200", 200, openai)

	// Output:
	// plain 200   none        pause=0s    exhausted=false remaining=-1 limit=-1 reset=unknown
	// 429         retry-after pause=30s   exhausted=true  remaining=-1 limit=-1 reset=unknown
	// IETF spent  ratelimit   pause=12s   exhausted=true  remaining=0 limit=100 reset=12s
	// GitHub 403  x-ratelimit pause=25m0s exhausted=true  remaining=0 limit=5000 reset=25m0s
	// OpenAI 200  x-ratelimit pause=0s    exhausted=false remaining=1200 limit=160000 reset=6m0s
}

// ExampleFeedback_quotas reads an OpenAI-style answer that reports two
// quotas: requests and tokens. The binding quota, the one closest to being
// spent, fills Remaining, Limit and Reset; Quotas lists both.
func ExampleFeedback_quotas() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", "5000")
	h.Set("x-ratelimit-remaining-requests", "4000")
	h.Set("x-ratelimit-reset-requests", "12s")
	h.Set("x-ratelimit-limit-tokens", "160000")
	h.Set("x-ratelimit-remaining-tokens", "16000")
	h.Set("x-ratelimit-reset-tokens", "6m0s")

	fb := ratelimit.Parse(200, h, now)
	fmt.Printf("binding: remaining=%d limit=%d reset=%v\n", fb.Remaining, fb.Limit, fb.Reset)
	for _, q := range fb.Quotas {
		fmt.Printf("%-8s remaining=%d limit=%d reset=%v\n", q.Name, q.Remaining, q.Limit, q.Reset)
	}

	// Output:
	// binding: remaining=16000 limit=160000 reset=6m0s
	// requests remaining=4000 limit=5000 reset=12s
	// tokens   remaining=16000 limit=160000 reset=6m0s
}
