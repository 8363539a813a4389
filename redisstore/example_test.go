package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/redisstore"
	"github.com/redis/go-redis/v9"
)

// Two processes of a fleet share one budget: each builds its own client,
// store and budget on the same key (here both live in one program). What
// one of them spends, or hears from the server, the other sees.
func Example() {
	key := fmt.Sprintf("example:%d", time.Now().UnixNano()) // one quota: the same key everywhere
	process := func() *core.Budget {
		client := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), ContextTimeoutEnabled: true})
		store, err := redisstore.New(client, key, redisstore.WithFailOpen(0.5))
		if err != nil {
			panic(err)
		}
		return core.MustBudget(core.PerSecond(2), core.WithBurst(1), core.WithStore(store))
	}
	a, b := process(), process()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()

	p, err := a.Acquire(ctx) // spends the burst of one
	fmt.Println("a admitted:", err == nil)

	_, err = b.Acquire(ctx) // the next turn is 500ms away, past the deadline
	var rl *core.RateLimitError
	fmt.Println("b refused at once:", errors.As(err, &rl), rl.Reason)

	p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}})
	fmt.Println("b paused by a's 429:", b.PauseRemaining() > 29*time.Second)
	err = b.Check(ctx)
	fmt.Println("b would fail with:", errors.As(err, &rl), rl.Reason, rl.StatusCode)
	// Output:
	// a admitted: true
	// b refused at once: true paced
	// b paused by a's 429: true
	// b would fail with: true paused 429
}

// A fleet-wide cap on open requests: a LeaseTransport outside the budget's
// transport holds one of the fleet's leases per request until its body is
// closed.
func ExampleNewLeaseTransport() {
	client := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), ContextTimeoutEnabled: true})
	store, err := redisstore.New(client, fmt.Sprintf("example-leases:%d", time.Now().UnixNano()),
		redisstore.WithMaxInFlight(20), redisstore.WithLeaseTTL(10*time.Second))
	if err != nil {
		panic(err)
	}
	budget := core.MustBudget(core.PerSecond(100), core.WithStore(store))
	httpClient := &http.Client{Transport: redisstore.NewLeaseTransport(core.NewTransport(nil, budget), store)}

	lease, err := store.AcquireLease(context.Background()) // what the transport does per request
	fmt.Println("lease taken:", err == nil)
	lease.Release()
	_ = httpClient
	// Output:
	// lease taken: true
}
