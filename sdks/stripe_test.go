package sdks_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

// stripeLimits is Stripe's documented sandbox limit: 25 requests a second.
var stripeLimits = quotatest.Config{Requests: 25, Period: time.Second}

// stripeClient is stripe-go over rt, at the fake's base URL, with its
// default retries (MaxNetworkRetries 2) and no log output.
func stripeClient(rt http.RoundTripper) *stripe.Client {
	return stripe.NewClient("sk_test_fake", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient:    &http.Client{Transport: rt},
		URL:           stripe.String("http://api.stripe.test"),
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
}

// stripeRun retrieves a customer n times from workers goroutines and
// returns how many calls failed.
func stripeRun(c *stripe.Client, n int) (failed int) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
	)
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, err := c.V1Customers.Retrieve(context.Background(), "cus_NffrFeUfNV2Hib", nil); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return failed
}

// TestStripe runs many concurrent calls through stripe-go and a budget of
// Stripe's sandbox limit: none refused, paced at the limit; and through
// stripe-go alone: calls fail with 429s, which stripe-go does not retry.
func TestStripe(t *testing.T) {
	for _, withHeadgate := range []bool{true, false} {
		t.Run(map[bool]string{true: "headgate", false: "alone"}[withHeadgate], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api, err := fake.Stripe(stripeLimits)
				if err != nil {
					t.Fatal(err)
				}
				rt := http.RoundTripper(api.Transport())
				if withHeadgate {
					rt = core.NewTransport(rt, core.MustBudget(core.PerSecond(stripeLimits.Requests)))
				}
				start := time.Now()
				failed := stripeRun(stripeClient(rt), 200)
				took := time.Since(start)
				t.Logf("headgate %v: %d calls in %v, %d refused, %d failed", withHeadgate, api.Admitted(), took, api.Refused(), failed)
				if !withHeadgate {
					if api.Refused() == 0 {
						t.Error("without headgate no call was refused: the test cannot tell headgate's effect")
					}
					return
				}
				if api.Refused() != 0 || failed != 0 {
					t.Errorf("with headgate: %d refused, %d failed; want none", api.Refused(), failed)
				}
				// 200 calls at 25 a second, 25 at once: the last goes at 7 s.
				if want := 7 * time.Second; took != want {
					t.Errorf("took %v, want %v", took, want)
				}
				if err := api.CheckPacing(stripeLimits.Requests, stripeLimits.Period/time.Duration(stripeLimits.Requests), 0); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// TestStripeOutage: Stripe says nothing about when to come back (no
// Retry-After), so a run of 429s cannot pause the budget; headgate's
// adaptive throttling slows every caller at once instead. Of the 50 calls
// the budget would send during a 2 s outage at the full rate, fewer than a
// quarter reach Stripe (and fail: stripe-go does not retry a rate_limit 429).
func TestStripeOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, err := fake.Stripe(stripeLimits)
		if err != nil {
			t.Fatal(err)
		}
		c := stripeClient(core.NewTransport(api.Transport(), core.MustBudget(core.PerSecond(stripeLimits.Requests))))
		pauseDuring(api, 2*time.Second, 2*time.Second)
		failed := stripeRun(c, 150)
		t.Logf("%d refused, %d failed of %d", api.Refused(), failed, api.Count())
		if n := api.Refused(); n == 0 || n*4 > 2*stripeLimits.Requests {
			t.Errorf("%d calls refused during the outage; want some, and under %d", n, 2*stripeLimits.Requests/4)
		}
	})
}
