package ratelimit_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// ExampleLoadProfile describes Bybit's API as a user would, from
// configuration: its vendor-named headers (X-Bapi-Limit-Status is what
// remains of X-Bapi-Limit, X-Bapi-Limit-Reset-Timestamp when it returns, in
// Unix milliseconds) and the flag in its body (retCode 10006 on a 200 is a
// refusal). The profile reads a documented refusal as the built-in
// ratelimit.Bybit does; a budget takes it with core.WithProfile.
func ExampleLoadProfile() {
	p, err := ratelimit.LoadProfile([]byte(`{
	  "name": "my-bybit", "body_bytes": 256,
	  "quotas": [{"limit": "X-Bapi-Limit", "remaining": "X-Bapi-Limit-Status",
	    "reset": "X-Bapi-Limit-Reset-Timestamp", "reset_encoding": "unix-ms", "window": "1s"}],
	  "signals": [{"statuses": [200], "field": "retCode", "values": ["10006", "10018"],
	    "until_reset": true, "default_wait": "1s"}]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Bapi-Limit", "10")
	h.Set("X-Bapi-Limit-Status", "0")
	h.Set("X-Bapi-Limit-Reset-Timestamp", fmt.Sprint(now.Add(800*time.Millisecond).UnixMilli()))
	body := []byte(`{"retCode":10006,"retMsg":"Too many visits!","result":{}}`)

	for _, pr := range []ratelimit.Profile{ratelimit.NoProfile, p, ratelimit.Bybit} {
		n := pr.BodyPrefix(200, h)
		fb := pr.Parse(200, h, body[:min(n, len(body))], now)
		fmt.Printf("%s: reads %d bytes, exhausted=%v pause=%v remaining=%d of %d\n",
			pr, n, fb.Exhausted, fb.Pause, fb.Remaining, fb.Limit)
	}
	// Output:
	// none: reads 0 bytes, exhausted=false pause=0s remaining=-1 of -1
	// my-bybit: reads 256 bytes, exhausted=true pause=800ms remaining=0 of 10
	// bybit: reads 256 bytes, exhausted=true pause=800ms remaining=0 of 10
}

// ExampleNewProfile writes in Go a profile for an API whose quota headers
// have names of its own (Etsy's x-limit-per-second and
// x-remaining-this-second) and whose refusal body names the wait.
func ExampleNewProfile() {
	p, err := ratelimit.NewProfile(ratelimit.Spec{
		Name: "etsy",
		Quotas: []ratelimit.QuotaSpec{
			{Name: "second", Limit: "X-Limit-Per-Second", Remaining: "X-Remaining-This-Second", Window: time.Second, Rolling: true},
			{Name: "day", Limit: "X-Limit-Per-Day", Remaining: "X-Remaining-Today", Window: 24 * time.Hour},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := http.Header{}
	h.Set("X-Limit-Per-Second", "10")
	h.Set("X-Remaining-This-Second", "0")
	h.Set("X-Limit-Per-Day", "10000")
	h.Set("X-Remaining-Today", "9120")
	fb := p.Parse(429, h, nil, time.Now())
	fmt.Printf("pause=%v binding=%d of %d\n", fb.Pause, fb.Remaining, fb.Limit)
	for _, q := range fb.Quotas {
		fmt.Printf("%s: %d of %d per %v\n", q.Name, q.Remaining, q.Limit, q.Window)
	}
	// Output:
	// pause=1s binding=0 of 10
	// second: 0 of 10 per 1s
	// day: 9120 of 10000 per 24h0m0s
}
