// Command gokit shows a headgate budget on go-kit client endpoints, against
// a local rate-limited server (core/quotatest): two endpoints paced by one
// shared budget under their HTTP client, a 429 on one that holds back the
// other until the pause ends, an lb.Retry whose retry goes out the instant
// the pause ends, a pause that outlasts the call's deadline, and the
// erroring limiter shedding what a second budget cannot send now. It runs in
// about five seconds.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/sd"
	"github.com/go-kit/kit/sd/lb"
	httptransport "github.com/go-kit/kit/transport/http"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgkit "github.com/headgate-go/headgate/gokit"
)

func main() {
	// The provider allows 5/s with one request of slack in its burst: a
	// budget set exactly at a provider's limit sees the odd 429 when network
	// jitter brings a paced request in a little early.
	srv, err := quotatest.NewServer(quotatest.Config{Requests: 5, Period: time.Second, Burst: 6})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println("server:", srv.Provider)

	budget, err := core.NewBudget(core.PerSecond(5), core.WithMaxInFlight(4), core.WithName("provider"))
	if err != nil {
		log.Fatal(err)
	}
	// The recommended wiring: the budget's transport under each endpoint's
	// HTTP client. One request sent = one turn; nothing else on this budget.
	items := newEndpoint(srv.URL+"/v1/items", hgkit.SetClient(nil, budget))
	orders := newEndpoint(srv.URL+"/v1/orders", hgkit.SetClient(nil, budget))

	// 1. Twelve calls on two endpoints: paced at 5/s together, none refused.
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 12 {
		ep := items
		if i%2 == 1 {
			ep = orders
		}
		wg.Go(func() {
			if _, err := ep(context.Background(), nil); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	fmt.Printf("1. shared budget: %d sent, %d refused, pacing within 5/s: %v, in %v\n",
		srv.Count(), srv.Refused(), srv.CheckPacing(5, 200*time.Millisecond, 20*time.Millisecond) == nil, since(start))

	// 2. The server pauses: items gets a 429, and orders, on the same
	// budget, waits for the pause instead of being refused too.
	srv.Reset()
	srv.PauseFor(2 * time.Second)
	_, err = items(context.Background(), nil)
	fmt.Printf("2. items: %v; budget paused for %v\n", err, budget.PauseRemaining().Round(time.Second))
	start = time.Now()
	resp, err := orders(context.Background(), nil)
	fmt.Printf("   orders: %v %v after waiting %v for the pause; refused in all: %d\n", resp, errString(err), since(start), srv.Refused())

	// 3. lb.Retry never waits between tries; the budget does: the retry
	// after a 429 goes out the moment the pause ends.
	srv.Reset()
	retry := lb.RetryWithCallback(10*time.Second, lb.NewRoundRobin(sd.FixedEndpointer{items}), hgkit.RetryCallback(3))
	srv.PauseFor(time.Second)
	start = time.Now()
	resp, err = retry(context.Background(), nil)
	arrivals := srv.Arrivals()
	fmt.Printf("3. lb.Retry: %v %v in %v; tries: %d, the retry sent %v after the 429\n",
		resp, errString(err), since(start), len(arrivals), arrivals[len(arrivals)-1].At.Sub(arrivals[0].At).Round(100*time.Millisecond))

	// 4. A pause longer than the call's deadline: the call fails at once
	// with core's error and is never sent.
	srv.Reset()
	srv.PauseFor(30 * time.Second)
	_, _ = items(context.Background(), nil) // the 429 that pauses the budget
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	start = time.Now()
	_, err = orders(ctx, nil)
	cancel()
	var rl *core.RateLimitError
	fmt.Printf("4. deadline 1s, pause %v: failed in %v, never sent: %v (%v)\n",
		budget.PauseRemaining().Round(time.Second), since(start), errors.As(err, &rl) && srv.Count() == 1, err)
	srv.ClearFaults()

	// 5. The limiter wiring on another budget: the erroring limiter sheds
	// what cannot be sent now, ClientFeedback feeds the responses back.
	search := core.MustBudget(core.PerSecond(2), core.WithName("search"))
	find := hgkit.NewErroringLimiter(search)(newEndpoint(srv.URL+"/v1/search", hgkit.ClientFeedback(search)))
	srv.Reset()
	var mu sync.Mutex
	limited := 0
	for range 5 {
		wg.Go(func() {
			_, err := find(context.Background(), nil)
			if errors.Is(err, hgkit.ErrLimited) {
				mu.Lock()
				limited++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf("5. erroring limiter at 2/s: 5 calls at once, %d sent, %d limited (errors.Is(err, hgkit.ErrLimited))\n", srv.Count(), limited)

	fmt.Printf("slots in use now: %d and %d\n", budget.InFlight(), search.InFlight())
}

// newEndpoint builds a go-kit client endpoint that GETs u; its decoder
// turns a 429 into an error (for lb.Retry) and answers the status.
func newEndpoint(u string, opts ...httptransport.ClientOption) endpoint.Endpoint {
	target, err := url.Parse(u)
	if err != nil {
		log.Fatal(err)
	}
	encode := func(context.Context, *http.Request, interface{}) error { return nil }
	decode := func(_ context.Context, resp *http.Response) (interface{}, error) {
		if err := hgkit.CheckResponse(resp); err != nil {
			return nil, err
		}
		_, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	return httptransport.NewClient(http.MethodGet, target, encode, decode, opts...).Endpoint()
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
