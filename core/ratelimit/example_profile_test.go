package ratelimit_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// ExampleProfile_Parse reads a GitHub secondary-limit refusal: a 403
// with quota left, which only the body marks as a throttle. The generic
// reader sees a plain 403; the GitHub profile waits a minute, as GitHub
// asks when no retry-after is sent. A budget built WithProfile reads every
// response this way, and its Transport reads the body prefix for it.
func ExampleProfile_Parse() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "4000")
	body := []byte(`{"message":"You have exceeded a secondary rate limit."}`)

	generic := ratelimit.Parse(403, h, now)
	fmt.Printf("generic: pause=%v exhausted=%v\n", generic.Pause, generic.Exhausted)

	p := ratelimit.GitHub
	n := p.BodyPrefix(403, h)
	fb := p.Parse(403, h, body[:min(n, len(body))], now)
	fmt.Printf("%s: reads %d bytes of the body, pause=%v exhausted=%v\n", p, n, fb.Pause, fb.Exhausted)

	// Output:
	// generic: pause=0s exhausted=false
	// github: reads 512 bytes of the body, pause=1m0s exhausted=true
}
