package sdks_test

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/go-github/v81/github"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stripe/stripe-go/v84"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/ratelimit"
)

// The README's snippets under an SDK: each function's body between
// "readme:begin" and "readme:end" is one, word for word (examples/readme's
// test checks it); its parameters are what the README takes as given. They
// compile with this package's tests and are never run.
var _ = []any{readmeOpenAI, readmeGitHub, readmeStripe}

func readmeOpenAI(ctx context.Context, params openai.ChatCompletionNewParams, promptTokens, maxTokens int64) (*openai.ChatCompletion, error) {
	// readme:begin
	budget := core.MustBudget(core.PerMinute(500), core.WithDimension("tokens", core.PerMinute(200_000)))
	hc := &http.Client{Transport: core.NewTransport(nil, budget, core.WithUsage("tokens"))}
	client := openai.NewClient(option.WithHTTPClient(hc)) // keep its retries: they wait as long as the budget
	ctx = core.WithCost(ctx, core.Cost{Dimension: "tokens", Amount: promptTokens + maxTokens})
	completion, err := client.Chat.Completions.New(ctx, params) // streamed: set StreamOptions.IncludeUsage
	// readme:end
	return completion, err
}

func readmeGitHub(ctx context.Context) (*github.Repository, error) {
	// readme:begin
	budget := core.MustBudget(core.PerHour(5000), core.WithProfile(ratelimit.GitHub)) // secondary limits too
	client := github.NewClient(&http.Client{Transport: core.NewTransport(nil, budget)})
	ctx = context.WithValue(ctx, github.BypassRateLimitCheck, true) // the budget holds the call, not go-github
	repo, _, err := client.Repositories.Get(ctx, "octocat", "Hello-World")
	var primary *github.RateLimitError
	var secondary *github.AbuseRateLimitError
	if errors.As(err, &primary) || errors.As(err, &secondary) {
		repo, _, err = client.Repositories.Get(ctx, "octocat", "Hello-World") // at once: the budget waits
	}
	// readme:end
	return repo, err
}

func readmeStripe(ctx context.Context, key string) (*stripe.Customer, error) {
	// readme:begin
	budget := core.MustBudget(core.PerSecond(25)) // Stripe's sandbox rate; 100/s live
	sc := stripe.NewClient(key, stripe.WithBackends(stripe.NewBackends(
		&http.Client{Transport: core.NewTransport(nil, budget)}))) // keep its retries
	customer, err := sc.V1Customers.Retrieve(ctx, "cus_NffrFeUfNV2Hib", nil)
	// readme:end
	return customer, err
}
