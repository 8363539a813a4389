// Command retryablehttp shows a headgate budget on a hashicorp/go-retryablehttp
// client, against a local rate-limited server (core/quotatest): callers paced
// at the provider's rate, a 429 whose retry goes out with every other caller
// the moment the pause ends, a Retry-After sent as an RFC 850 date (which
// retryablehttp alone cannot read), an absurd Retry-After capped, and a pause
// that outlasts the request's deadline. It runs in about six seconds.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
)

func main() {
	// The provider admits 10 requests a second. Two of its endpoints refuse
	// their first call themselves, with a Retry-After some providers send:
	// an RFC 850 date, and a value of 484289 hours (a real report).
	var mu sync.Mutex
	var named time.Time // the instant the RFC 850 date named
	calls := map[string]int{}
	srv, err := quotatest.NewServer(quotatest.Config{Requests: 10, Period: time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls[r.URL.Path]++
			first := calls[r.URL.Path] == 1
			mu.Unlock()
			switch {
			case first && r.URL.Path == "/v1/rfc850":
				at := time.Now().Add(time.Second).Truncate(time.Second).Add(time.Second).UTC()
				mu.Lock()
				named = at
				mu.Unlock()
				w.Header().Set("Retry-After", at.Format("Monday, 02-Jan-06 15:04:05 GMT"))
				w.WriteHeader(http.StatusTooManyRequests)
			case first && r.URL.Path == "/v1/absurd":
				w.Header().Set("Retry-After", "1743440400")
				w.WriteHeader(http.StatusTooManyRequests)
			default:
				_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
			}
		})})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println("server:", srv.Provider)

	// The provider's rate, with a burst two under the provider's as slack
	// for network jitter. Any TLS or proxy settings on client.HTTPClient go
	// before Use, which wraps its transport.
	budget, err := core.NewBudget(core.PerSecond(10), core.WithBurst(8), core.WithMaxInFlight(8),
		core.WithName("provider"))
	if err != nil {
		log.Fatal(err)
	}
	client := hgretry.Use(retryablehttp.NewClient(), budget)
	client.Logger = nil

	// 1. Sixteen concurrent calls: paced at 10/s, none refused.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { get(context.Background(), client, srv.URL+"/v1/items") })
	}
	wg.Wait()
	fmt.Printf("1. sixteen calls: %d sent, %d refused, within 10/s: %v\n",
		srv.Count(), srv.Refused(), srv.CheckPacing(10, 100*time.Millisecond, 10*time.Millisecond) == nil)

	// 2. The server pauses for a second: the first call gets a 429 with
	// Retry-After: 1. Its retry and three later callers resume together.
	srv.Reset()
	srv.PauseFor(time.Second)
	wg.Go(func() { get(context.Background(), client, srv.URL+"/v1/orders") })
	for budget.PauseRemaining() == 0 {
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		wg.Go(func() { get(context.Background(), client, srv.URL+"/v1/users") })
	}
	wg.Wait()
	fmt.Println("2. a 429 with Retry-After: 1 (server arrival times, from the 429's, rounded to 10ms):")
	printArrivals(srv.Arrivals())

	// 3. A Retry-After as an RFC 850 date: retryablehttp's own parser reads
	// only seconds and RFC 1123 and would fall back to its exponential
	// backoff; the budget reads every RFC 9110 form.
	srv.Reset()
	get(context.Background(), client, srv.URL+"/v1/rfc850")
	arrivals := srv.Arrivals()
	mu.Lock()
	fmt.Printf("3. Retry-After as an RFC 850 date: %d attempts, the retry sent %v after the date named\n",
		len(arrivals), arrivals[len(arrivals)-1].At.Sub(named).Round(10*time.Millisecond))
	mu.Unlock()

	// 4. A Retry-After of 484289 hours: retryablehttp alone would sleep it
	// all. The budget caps every pause (one hour by default; two seconds on
	// this client's budget, WithMaxPause).
	capped := core.MustBudget(core.PerSecond(10), core.WithMaxPause(2*time.Second))
	cappedClient := hgretry.Use(retryablehttp.NewClient(), capped)
	cappedClient.Logger = nil
	srv.Reset()
	get(context.Background(), cappedClient, srv.URL+"/v1/absurd")
	arrivals = srv.Arrivals()
	fmt.Printf("4. Retry-After: 1743440400 (484289 h), capped at 2s: %d attempts, retried %v after the 429\n",
		len(arrivals), arrivals[len(arrivals)-1].At.Sub(arrivals[0].At).Round(10*time.Millisecond))

	// 5. A pause longer than the request's deadline fails at once with
	// core's error instead of sleeping until the deadline.
	srv.PauseFor(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/users", nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Do(req)
	var rl *core.RateLimitError
	fmt.Printf("5. Retry-After: 60 with a 2s deadline: budget error %v, after %v:\n   %v\n",
		errors.As(err, &rl), time.Since(start).Round(100*time.Millisecond), err)

	fmt.Println("slots held at the end:", budget.InFlight())
}

// get sends a GET, reads and closes the body, and fails loudly on an error.
func get(ctx context.Context, c *retryablehttp.Client, url string) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		log.Fatal(err)
	}
}

func printArrivals(arrivals []quotatest.Arrival) {
	for _, a := range arrivals {
		fmt.Printf("   +%-6v %s %d %s\n", a.At.Sub(arrivals[0].At).Round(10*time.Millisecond), a.Path, a.Status, a.Outcome)
	}
}
