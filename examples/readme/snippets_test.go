package readme_test

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/sd"
	"github.com/go-kit/kit/sd/lb"
	httptransport "github.com/go-kit/kit/transport/http"
	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/redis/go-redis/v9"

	"github.com/headgate-go/headgate/core"
	hgkit "github.com/headgate-go/headgate/gokit"
	"github.com/headgate-go/headgate/redisstore"
	hgresty "github.com/headgate-go/headgate/resty"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
)

// Each function's body between "readme:begin" and "readme:end" is a
// snippet of the README; its parameters are what the README takes as
// given. The functions compile with this package's tests and are never
// run: the snippets call a server that is not there.
var _ = []any{quickStart, withResty, withRetryablehttp, withGoKit, withTokens, withRedis}

func quickStart() error {
	// readme:begin
	// import "github.com/headgate-go/headgate/core"
	budget, err := core.NewBudget(core.PerSecond(10), core.WithMaxInFlight(4))
	if err != nil {
		return err // an invalid option: the error names it
	}
	client := &http.Client{Transport: core.NewTransport(nil, budget), Timeout: 30 * time.Second}
	resp, err := client.Get("https://api.example.com/v1/items")
	if err != nil {
		return err // core.IsBudgetError(err): its turn or the server's pause came too late, never sent
	}
	defer resp.Body.Close()
	// readme:end
	return nil
}

func withResty(ctx context.Context, budget *core.Budget) (*resty.Response, error) {
	// readme:begin
	// import hgresty "github.com/headgate-go/headgate/resty"
	client := hgresty.Use(resty.New(), budget).SetRetryCount(3) // a retry waits out the budget's pause
	resp, err := client.R().SetContext(ctx).Get("https://api.example.com/v1/items")
	// readme:end
	return resp, err
}

func withRetryablehttp(budget *core.Budget) (*http.Response, error) {
	// readme:begin
	// import hgretry "github.com/headgate-go/headgate/retryablehttp"
	client := hgretry.Use(retryablehttp.NewClient(), budget) // its Backoff waits out the budget's pause
	resp, err := client.Get("https://api.example.com/v1/items")
	// readme:end
	return resp, err
}

func withGoKit(budget *core.Budget, itemsURL *url.URL, encode httptransport.EncodeRequestFunc,
	decode httptransport.DecodeResponseFunc) endpoint.Endpoint {
	// readme:begin
	// import hgkit "github.com/headgate-go/headgate/gokit"
	items := httptransport.NewClient("GET", itemsURL, encode, decode, hgkit.SetClient(nil, budget)).Endpoint()
	// lb.Retry that stops at a budget's refusal; each try waits in the budget, not between tries
	retrying := hgkit.Retry(3, 10*time.Second, lb.NewRoundRobin(sd.FixedEndpointer{items}))
	// readme:end
	return retrying
}

func withTokens(ctx context.Context, req *http.Request, readUsage func(*http.Response) int64) error {
	// readme:begin
	budget := core.MustBudget(core.PerMinute(3_500), core.WithDimension("tokens", core.PerMinute(90_000)))
	client := &http.Client{Transport: core.NewTransport(nil, budget)}
	ctx = core.WithCost(ctx, core.Cost{Dimension: "tokens", Amount: 4_000}) // the call's upper bound
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	used := readUsage(resp) // what the reply says it used, e.g. usage.total_tokens
	core.Commit(resp, core.Cost{Dimension: "tokens", Amount: used})
	// readme:end
	return nil
}

func withRedis() (*core.Budget, error) {
	// readme:begin
	// import "github.com/headgate-go/headgate/redisstore"
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	store, err := redisstore.New(rdb, "headgate:github", redisstore.WithFailOpen(0.25))
	if err != nil {
		return nil, err
	}
	budget, err := core.NewBudget(core.PerHour(5000), core.WithStore(store)) // one quota, every process
	// readme:end
	return budget, err
}
