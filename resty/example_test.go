package resty_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgresty "github.com/headgate-go/headgate/resty"
)

func Example() {
	// A fake provider allowing 10 requests a second, served in-process.
	p, err := quotatest.New(quotatest.Config{Requests: 10, Period: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	budget := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(4))

	// Configure the transport first (TLS, proxy… here the fake provider),
	// then put the budget on the client. Resty retries nothing until
	// SetRetryCount.
	client := hgresty.Use(resty.New().SetTransport(p.Transport()), budget).
		SetRetryCount(3)

	// For the next two seconds the provider answers 429 with
	// Retry-After: 2. Resty's retry waits exactly that pause, and is
	// admitted.
	p.PauseFor(2 * time.Second)
	resp, err := client.R().Get("http://api.example/v1/items")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", resp.StatusCode(), "after", resp.Request.Attempt, "attempts")
	for _, a := range p.Arrivals() {
		fmt.Println("provider:", a.Status, a.Outcome)
	}

	// A pause that outlasts the request's deadline fails at once with
	// core's error, instead of sleeping until the deadline.
	p.PauseFor(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = client.R().SetContext(ctx).Get("http://api.example/v1/items")
	var rl *core.RateLimitError
	if errors.As(err, &rl) {
		fmt.Println("not retried:", rl.Reason, "after status", rl.StatusCode)
	}
	fmt.Println("slots held:", budget.InFlight())
	// Output:
	// status: 200 after 2 attempts
	// provider: 429 RefusedPause
	// provider: 200 Admitted
	// not retried: paused after status 429
	// slots held: 0
}
