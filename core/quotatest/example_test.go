package quotatest_test

import (
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

func Example() {
	// A frozen clock makes every decision deterministic, even outside testing/synctest.
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	p, err := quotatest.New(quotatest.Config{
		Requests: 2,
		Period:   time.Second,
		Headers:  quotatest.RetryAfterSeconds | quotatest.XRateLimitDelta,
		Now:      func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	client := p.Client() // in-process: no network
	for range 3 {
		resp, err := client.Get("http://api.example/v1/items")
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("%d remaining=%s retry-after=%q\n",
			resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"), resp.Header.Get("Retry-After"))
	}
	fmt.Println("admitted:", p.Admitted(), "refused:", p.Refused())
	// Output:
	// 200 remaining=1 retry-after=""
	// 200 remaining=0 retry-after=""
	// 429 remaining=0 retry-after="1"
	// admitted: 2 refused: 1
}

func ExampleCheckTimes() {
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }

	// Burst 2, then one every 100ms: within the bound.
	fmt.Println(quotatest.CheckTimes([]time.Time{ms(0), ms(0), ms(100), ms(200)}, 2, 100*time.Millisecond, 0))
	// The fourth comes 50ms early.
	fmt.Println(quotatest.CheckTimes([]time.Time{ms(0), ms(0), ms(100), ms(150)}, 2, 100*time.Millisecond, 0))
	// Output:
	// <nil>
	// headgate: quotatest: 4 arrivals within 150ms, from 2025-01-01T12:00:00Z to 2025-01-01T12:00:00.15Z; at most 3 allowed (burst 2 + floor((150ms + 0s slack) / 100ms))
}

func ExampleNewServer() {
	s, err := quotatest.NewServer(quotatest.Config{
		Requests: 1,
		Period:   time.Hour,
		Status:   http.StatusServiceUnavailable,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	for range 2 {
		resp, err := s.Client().Get(s.URL + "/v1/items")
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("%s retry-after=%q\n", resp.Status, resp.Header.Get("Retry-After"))
	}

	// A POST is not retried by net/http on a reused connection, so the reset reaches the caller.
	s.ResetConnections(1)
	_, err = s.Client().Post(s.URL+"/v1/items", "application/json", strings.NewReader("{}"))
	fmt.Println("reset:", err != nil)
	fmt.Println("arrivals:", s.Count(), "refused:", s.Refused())
	// Output:
	// 200 OK retry-after=""
	// 503 Service Unavailable retry-after="3600"
	// reset: true
	// arrivals: 3 refused: 1
}

func ExampleLimiter() {
	// When would 5 requests be admitted, each sent the instant the server allows it? Fixed
	// windows of 2 per second that start at the first request after the last one ended.
	lim, err := quotatest.NewLimiter(quotatest.Config{Requests: 2, Period: time.Second, Algorithm: quotatest.FirstRequestWindow})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 12, 0, 0, 300_000_000, time.UTC)
	at := start
	for range 5 {
		for {
			ok, wait := lim.Take(at)
			if ok {
				break
			}
			at = at.Add(wait)
		}
		fmt.Println(at.Sub(start))
	}
	// Output:
	// 0s
	// 0s
	// 1s
	// 1s
	// 2s
}
