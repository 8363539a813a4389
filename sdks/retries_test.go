package sdks_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

// countingTransport counts the attempts an SDK makes.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestSDKRetriesIntoPause measures what each SDK does when the budget is
// paused for a minute and the call's deadline is 10 s: the budget fails
// every attempt at once with *core.RateLimitError, unsent; openai-go,
// anthropic-sdk-go and stripe-go retry it as a connection error (twice,
// after their backoff), and each retry fails the same way. Nothing reaches
// the provider.
func TestSDKRetriesIntoPause(t *testing.T) {
	calls := map[string]func(rt http.RoundTripper, ctx context.Context) error{
		"openai-go": func(rt http.RoundTripper, ctx context.Context) error {
			c := openAIClient(rt)
			_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: openai.ChatModelGPT5_5,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			return err
		},
		"anthropic-sdk-go": func(rt http.RoundTripper, ctx context.Context) error {
			c := anthropicClient(rt)
			_, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.ModelClaudeHaiku5_5, MaxTokens: 10,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			return err
		},
		"stripe-go": func(rt http.RoundTripper, ctx context.Context) error {
			_, err := stripeClient(rt).V1Customers.Retrieve(ctx, "cus_NffrFeUfNV2Hib", nil)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api, err := fake.Stripe(quotatest.Config{Requests: 100, Period: time.Second}) // any provider: nothing may reach it
				if err != nil {
					t.Fatal(err)
				}
				b := core.MustBudget(core.PerSecond(100))
				b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"60"}}, time.Time{})
				ct := &countingTransport{next: core.NewTransport(api.Transport(), b)}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				err = call(ct, ctx)
				var rl *core.RateLimitError
				t.Logf("%s: %d attempts in %v, %d sent; error: %v", name, ct.n.Load(), time.Since(start), api.Count(), err)
				if !errors.As(err, &rl) {
					t.Errorf("error %v is not a *core.RateLimitError", err)
				}
				if api.Count() != 0 || ct.n.Load() != 3 {
					t.Errorf("%d attempts, %d sent; want 3 (the SDK's two retries), none sent", ct.n.Load(), api.Count())
				}
			})
		})
	}
}
