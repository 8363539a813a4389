// Command resty shows a headgate budget on go-resty/resty/v2 clients,
// against a local rate-limited server (core/quotatest): two clients sharing
// one quota, a 429 whose retry goes out with every other caller the moment
// the pause ends, a Retry-After longer than resty's RetryMaxWaitTime, and a
// pause that outlasts the request's deadline. It runs in about five seconds.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgresty "github.com/headgate-go/headgate/resty"
)

func main() {
	srv, err := quotatest.NewServer(quotatest.Config{Requests: 10, Period: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println("server:", srv.Provider)

	// The provider's rate, with a burst two under the provider's as slack
	// for network jitter.
	budget, err := core.NewBudget(core.PerSecond(10), core.WithBurst(8), core.WithMaxInFlight(8),
		core.WithName("provider"))
	if err != nil {
		log.Fatal(err)
	}
	// Two clients spending the same provider quota share one budget. Any
	// TLS or proxy settings go before Use, which wraps the transport.
	orders := hgresty.Use(resty.New(), budget).SetRetryCount(3).SetBaseURL(srv.URL)
	users := hgresty.Use(resty.New(), budget).SetRetryCount(3).SetBaseURL(srv.URL)

	// 1. Sixteen calls from two clients: paced at 10/s together, none
	// refused.
	var wg sync.WaitGroup
	for i := range 16 {
		c, path := orders, "/v1/orders"
		if i%2 == 1 {
			c, path = users, "/v1/users"
		}
		wg.Go(func() { get(c, path) })
	}
	wg.Wait()
	fmt.Printf("1. two clients, one budget: %d sent, %d refused, within 10/s: %v\n",
		srv.Count(), srv.Refused(), srv.CheckPacing(10, 100*time.Millisecond, 10*time.Millisecond) == nil)

	// 2. The server pauses for a second: the first call gets a 429 with
	// Retry-After: 1. Its retry and three later callers resume together.
	srv.Reset()
	srv.PauseFor(time.Second)
	wg.Go(func() { get(orders, "/v1/orders") })
	for budget.PauseRemaining() == 0 {
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		wg.Go(func() { get(users, "/v1/users") })
	}
	wg.Wait()
	fmt.Println("2. a 429 with Retry-After: 1 (server arrival times, from the 429's, rounded to 10ms):")
	arrivals := srv.Arrivals()
	for _, a := range arrivals {
		fmt.Printf("   +%-6v %s %d %s\n", a.At.Sub(arrivals[0].At).Round(10*time.Millisecond), a.Path, a.Status, a.Outcome)
	}

	// 3. Resty cuts a RetryAfter wait to RetryMaxWaitTime (1s here, 2s by
	// default); the budget's pause is waited in full.
	srv.Reset()
	orders.SetRetryMaxWaitTime(time.Second)
	srv.PauseFor(2 * time.Second)
	resp := get(orders, "/v1/orders")
	arrivals = srv.Arrivals()
	fmt.Printf("3. Retry-After: 2 with RetryMaxWaitTime 1s: status %d after %d attempts, retried %v after the 429\n",
		resp.StatusCode(), resp.Request.Attempt, arrivals[len(arrivals)-1].At.Sub(arrivals[0].At).Round(10*time.Millisecond))

	// 4. A pause longer than the request's deadline fails at once with
	// core's error instead of sleeping until the deadline.
	srv.PauseFor(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = users.SetLogger(quiet{}).R().SetContext(ctx).Get("/v1/users")
	var rl *core.RateLimitError
	fmt.Printf("4. Retry-After: 60 with a 2s deadline: budget error %v (%v), after %v\n",
		errors.As(err, &rl), err, time.Since(start).Round(100*time.Millisecond))

	fmt.Println("slots held at the end:", budget.InFlight())
}

// get sends a GET and fails loudly on an unexpected error.
func get(c *resty.Client, path string) *resty.Response {
	resp, err := c.R().Get(path)
	if err != nil {
		log.Fatal(err)
	}
	return resp
}

// quiet drops resty's log lines.
type quiet struct{}

func (quiet) Errorf(string, ...any) {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Debugf(string, ...any) {}
