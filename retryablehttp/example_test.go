package retryablehttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
)

// A provider refuses every request for two seconds with "429,
// Retry-After: 2". The client retries when the budget's pause ends, and
// the retry goes through.
func ExampleUse() {
	server, err := quotatest.NewServer(quotatest.Config{Requests: 5, Period: time.Second})
	if err != nil {
		panic(err)
	}
	defer server.Close()

	budget := core.MustBudget(core.PerSecond(5), core.WithMaxInFlight(2))
	client := hgretry.Use(retryablehttp.NewClient(), budget)
	client.Logger = nil
	client.ResponseLogHook = func(_ retryablehttp.Logger, resp *http.Response) {
		fmt.Printf("attempt: %s, Retry-After %q\n", resp.Status, resp.Header.Get("Retry-After"))
	}

	server.PauseFor(2 * time.Second)
	resp, err := client.Get(server.URL + "/v1/items")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("status:", resp.StatusCode)
	fmt.Println("slots held:", budget.InFlight())
	// Output:
	// attempt: 429 Too Many Requests, Retry-After "2"
	// attempt: 200 OK, Retry-After ""
	// status: 200
	// slots held: 0
}

// The provider pauses for a minute, but the caller has five seconds: the
// request is not retried, and Do returns at once with core's error instead
// of sleeping until the deadline.
func ExampleCheckRetry() {
	server, err := quotatest.NewServer(quotatest.Config{Requests: 5, Period: time.Second})
	if err != nil {
		panic(err)
	}
	defer server.Close()
	budget := core.MustBudget(core.PerSecond(5))
	client := hgretry.Use(retryablehttp.NewClient(), budget)
	client.Logger = nil

	server.PauseFor(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, server.URL+"/v1/items", nil)
	if err != nil {
		panic(err)
	}
	_, err = client.Do(req)

	var rle *core.RateLimitError
	if errors.As(err, &rle) {
		fmt.Println("budget error, status that paused the budget:", rle.StatusCode)
	}
	fmt.Println("matches the deadline:", errors.Is(err, context.DeadlineExceeded))
	fmt.Println("requests sent:", server.Count())
	// Output:
	// budget error, status that paused the budget: 429
	// matches the deadline: true
	// requests sent: 1
}

// Backoff and CheckRetry decorate policies set by hand; here the linear
// jitter backoff. A budget paused for 2s by a 429 makes the retry wait the
// pause, whatever the decorated policy would have said.
func ExampleBackoff() {
	budget := core.MustBudget(core.PerSecond(5))
	client := retryablehttp.NewClient()
	client.HTTPClient.Transport = core.NewTransport(client.HTTPClient.Transport, budget)
	client.Backoff = hgretry.Backoff(budget, retryablehttp.LinearJitterBackoff)
	client.CheckRetry = hgretry.CheckRetry(budget, retryablehttp.DefaultRetryPolicy)

	budget.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}, time.Time{})
	wait := client.Backoff(client.RetryWaitMin, client.RetryWaitMax, 0, nil)
	fmt.Println("retry in:", wait.Round(time.Second))
	// Output: retry in: 2s
}
