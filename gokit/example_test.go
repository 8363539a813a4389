package gokit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/sd"
	"github.com/go-kit/kit/sd/lb"
	httptransport "github.com/go-kit/kit/transport/http"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgkit "github.com/headgate-go/headgate/gokit"
)

// The recommended wiring: the budget under the go-kit HTTP client. The
// budget allows 10 calls a second, but the provider only 2 a minute: its
// 429 pauses the budget, and the next call, whose deadline comes before the
// pause ends, fails at once without being sent.
func ExampleSetClient() {
	provider, _ := quotatest.New(quotatest.Config{Requests: 2, Period: time.Minute})
	budget := core.MustBudget(core.PerSecond(10))

	u, _ := url.Parse("http://api.example/v1/items")
	items := httptransport.NewClient(http.MethodGet, u,
		func(context.Context, *http.Request, interface{}) error { return nil },
		func(_ context.Context, resp *http.Response) (interface{}, error) {
			if err := hgkit.CheckResponse(resp); err != nil {
				return nil, err // a 429 is an error lb.Retry can see
			}
			return resp.StatusCode, nil
		},
		hgkit.SetClient(&http.Client{Transport: provider.Transport()}, budget),
	).Endpoint()

	for i := 1; i <= 4; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := items(ctx, nil)
		cancel()
		var refused *hgkit.ResponseError
		var rl *core.RateLimitError
		switch {
		case err == nil:
			fmt.Printf("call %d: %d\n", i, resp)
		case errors.As(err, &refused):
			fmt.Printf("call %d: the server refused it: %d\n", i, refused.StatusCode)
		case errors.As(err, &rl):
			fmt.Printf("call %d: not sent: budget %s after status %d\n", i, rl.Reason, rl.StatusCode)
		}
	}
	fmt.Println("requests the server saw:", provider.Count())
	// Output:
	// call 1: 200
	// call 2: 200
	// call 3: the server refused it: 429
	// call 4: not sent: budget paused after status 429
	// requests the server saw: 3
}

// The erroring limiter sheds what the budget cannot send now, as go-kit's
// ratelimit.NewErroringLimiter does, and says when the next turn comes.
func ExampleNewErroringLimiter() {
	budget := core.MustBudget(core.PerMinute(2)) // two at once, then one every 30s

	items := endpoint.Chain(
		hgkit.NewErroringLimiter(budget),
	)(func(context.Context, interface{}) (interface{}, error) {
		fmt.Println("  sent")
		return struct{}{}, nil
	})

	for i := 1; i <= 3; i++ {
		fmt.Printf("call %d\n", i)
		_, err := items(context.Background(), nil)
		var rl *core.RateLimitError
		if errors.Is(err, hgkit.ErrLimited) && errors.As(err, &rl) {
			fmt.Printf("  limited: next turn in under 30s: %v\n", rl.RetryAfter <= 30*time.Second)
		}
	}
	// Output:
	// call 1
	//   sent
	// call 2
	//   sent
	// call 3
	//   limited: next turn in under 30s: true
}

// The delaying limiter, with ClientFeedback so the responses reach the
// budget: the 429 one endpoint gets pauses another endpoint spending from
// the same budget, and a call whose deadline comes before the pause ends
// fails at once with core's error.
func ExampleNewDelayingLimiter() {
	provider, _ := quotatest.New(quotatest.Config{Requests: 100, Period: time.Second})
	budget := core.MustBudget(core.PerSecond(100))
	client := &http.Client{Transport: provider.Transport()}

	endpointFor := func(path string) endpoint.Endpoint {
		u, _ := url.Parse("http://api.example" + path)
		return hgkit.NewDelayingLimiter(budget)(httptransport.NewClient(http.MethodGet, u,
			func(context.Context, *http.Request, interface{}) error { return nil },
			func(_ context.Context, resp *http.Response) (interface{}, error) {
				return resp.StatusCode, hgkit.CheckResponse(resp)
			},
			httptransport.SetClient(client),
			hgkit.ClientFeedback(budget),
		).Endpoint())
	}
	items, orders := endpointFor("/v1/items"), endpointFor("/v1/orders")

	provider.PauseFor(time.Hour)
	_, err := items(context.Background(), nil)
	fmt.Println("items:", err)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = orders(ctx, nil)
	var rl *core.RateLimitError
	fmt.Println("orders sent:", !errors.As(err, &rl))
	fmt.Println("orders waited for the deadline:", ctx.Err() != nil)
	fmt.Println("pause outlasts the deadline:", rl.RetryAfter > 5*time.Second)
	// Output:
	// items: headgate: server refused the call: 429 Too Many Requests
	// orders sent: false
	// orders waited for the deadline: false
	// pause outlasts the deadline: true
}

// Retry is lb.Retry for endpoints on a budget: after the server's 429 it
// would try again when the pause ends, but this pause outlasts the retry's
// timeout, so the next try is not sent and Retry stops at once, with an
// error that reaches core's.
func ExampleRetry() {
	provider, _ := quotatest.New(quotatest.Config{Requests: 100, Period: time.Second})
	budget := core.MustBudget(core.PerSecond(100))
	u, _ := url.Parse("http://api.example/v1/items")
	items := httptransport.NewClient(http.MethodGet, u,
		func(context.Context, *http.Request, interface{}) error { return nil },
		func(_ context.Context, resp *http.Response) (interface{}, error) {
			return resp.StatusCode, hgkit.CheckResponse(resp)
		},
		hgkit.SetClient(&http.Client{Transport: provider.Transport()}, budget),
	).Endpoint()
	retrying := hgkit.Retry(3, 5*time.Second, lb.NewRoundRobin(sd.FixedEndpointer{items}))

	provider.PauseFor(time.Hour)
	_, err := retrying(context.Background(), nil)
	var rl *core.RateLimitError
	if errors.As(err, &rl) {
		fmt.Println("not retried: budget", rl.Reason, "after status", rl.StatusCode)
	}
	fmt.Println("requests the server saw:", provider.Count())
	// Output:
	// not retried: budget paused after status 429
	// requests the server saw: 1
}
