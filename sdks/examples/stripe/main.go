// Command stripe runs concurrent calls through stripe-go and a headgate
// budget of Stripe's sandbox limit (25 requests a second), against a fake
// Stripe (offline, in-process).
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

func main() {
	api, err := fake.Stripe(quotatest.Config{Requests: 25, Period: time.Second})
	if err != nil {
		log.Fatal(err)
	}

	budget := core.MustBudget(core.PerSecond(25))
	sc := stripe.NewClient("sk_test_fake", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient: &http.Client{Transport: core.NewTransport(api.Transport(), budget)},
		URL:        stripe.String("http://api.stripe.test"), // a real program keeps the default
	})))

	start := time.Now()
	var wg sync.WaitGroup
	for range 75 {
		wg.Go(func() {
			if _, err := sc.V1Customers.Retrieve(context.Background(), "cus_NffrFeUfNV2Hib", nil); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	fmt.Printf("calls: %d, refused: %d, in %.0fs\n", api.Admitted(), api.Refused(), time.Since(start).Seconds())
}
