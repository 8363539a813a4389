package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-kit/kit/sd"
	"github.com/go-kit/kit/sd/lb"
	httptransport "github.com/go-kit/kit/transport/http"
	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/headgate-go/headgate/core"
	hgkit "github.com/headgate-go/headgate/gokit"
	hgresty "github.com/headgate-go/headgate/resty"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
)

// env is what a client is built from: the URL, the limit it is
// configured at, and the base transport every client sends through.
type env struct {
	url   string
	rate  int // requests per second the client is configured at
	burst int // the burst it uses
	base  http.RoundTripper
}

// client makes one call of the batch.
type client struct {
	call   func(ctx context.Context) bool // true when the call ended in a 2xx
	budget *core.Budget                   // headgate's budget, nil for the others
	close  func()
}

// clientSpec names a client and builds it.
type clientSpec struct {
	name     string
	rated    bool // it is configured at a rate, so it runs in the misconfigured scenario
	headgate bool
	build    func(env) (*client, error)
}

// clients are the demo's clients, in the order they run.
var clients = []clientSpec{
	{name: "no limiter (net/http)", build: plainClient},
	{name: "resty, 3 retries on 429", build: restyClient},
	{name: "retryablehttp defaults", build: retryClient},
	{name: "x/time/rate + net/http", rated: true, build: xrateClient},
	{name: "headgate · net/http", rated: true, headgate: true, build: headgateClient},
	{name: "headgate · resty", rated: true, headgate: true, build: headgateResty},
	{name: "headgate · retryablehttp", rated: true, headgate: true, build: headgateRetry},
	{name: "headgate · go-kit", rated: true, headgate: true, build: headgateKit},
}

// get sends one GET with hc and reads the response to the end.
func get(ctx context.Context, hc *http.Client, u string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// plainClient sends every call at once: no limit, no retry.
func plainClient(e env) (*client, error) {
	hc := &http.Client{Transport: e.base}
	return &client{call: func(ctx context.Context) bool { return get(ctx, hc, e.url) }}, nil
}

// restyClient is resty v2 with its defaults and three retries. Resty
// retries only transport errors unless told otherwise, so a 429 retry
// condition is added, as resty's documentation shows; its backoff (100 ms
// to 2 s, jittered) ignores Retry-After.
func restyClient(e env) (*client, error) {
	rc := resty.NewWithClient(&http.Client{Transport: e.base}).
		SetRetryCount(3).
		AddRetryCondition(func(r *resty.Response, err error) bool {
			return r != nil && r.StatusCode() == http.StatusTooManyRequests
		})
	return &client{call: func(ctx context.Context) bool {
		r, err := rc.R().SetContext(ctx).Get(e.url)
		return err == nil && r.IsSuccess()
	}}, nil
}

// newRetryablehttp is go-retryablehttp with its defaults (4 retries,
// backoff 1 s to 30 s, Retry-After honoured on a 429), logging off.
func newRetryablehttp(e env) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.HTTPClient.Transport = e.base
	return c
}

func retryCall(c *retryablehttp.Client, u string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false
		}
		resp, err := c.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode/100 == 2
	}
}

func retryClient(e env) (*client, error) {
	return &client{call: retryCall(newRetryablehttp(e), e.url)}, nil
}

// xrateClient waits on an x/time/rate limiter at the rate it was configured at,
// then sends with a plain client.
func xrateClient(e env) (*client, error) {
	lim := rate.NewLimiter(rate.Limit(e.rate), e.burst)
	hc := &http.Client{Transport: e.base}
	return &client{call: func(ctx context.Context) bool {
		if lim.Wait(ctx) != nil {
			return false
		}
		return get(ctx, hc, e.url)
	}}, nil
}

// newBudget is the budget every headgate client spends from: the rate it
// is configured at, its burst, and a concurrency cap (whose slots must all be free
// at the end).
func newBudget(e env) (*core.Budget, error) {
	return core.NewBudget(core.PerSecond(e.rate), core.WithBurst(e.burst), core.WithMaxInFlight(16))
}

func headgateClient(e env) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: core.NewTransport(e.base, b)}
	return &client{budget: b, call: func(ctx context.Context) bool { return get(ctx, hc, e.url) }}, nil
}

func headgateResty(e env) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	rc := hgresty.Use(resty.NewWithClient(&http.Client{Transport: e.base}), b).SetRetryCount(3)
	return &client{budget: b, call: func(ctx context.Context) bool {
		r, err := rc.R().SetContext(ctx).Get(e.url)
		return err == nil && r.IsSuccess()
	}}, nil
}

func headgateRetry(e env) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	return &client{budget: b, call: retryCall(hgretry.Use(newRetryablehttp(e), b), e.url)}, nil
}

// headgateKit is hgkit's recommended wiring: the budget under the go-kit
// HTTP client (SetClient), a decoder that turns a 429 into an error
// (CheckResponse), and lb.Retry with RetryCallback, which never retries a
// budget error; the budget does the waiting between tries.
func headgateKit(e env) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(e.url)
	if err != nil {
		return nil, err
	}
	encode := func(context.Context, *http.Request, any) error { return nil }
	decode := func(_ context.Context, resp *http.Response) (any, error) {
		if err := hgkit.CheckResponse(resp); err != nil {
			return nil, err
		}
		_, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	ep := httptransport.NewClient(http.MethodGet, u, encode, decode,
		hgkit.SetClient(&http.Client{Transport: e.base}, b)).Endpoint()
	retry := lb.RetryWithCallback(time.Minute, lb.NewRoundRobin(sd.FixedEndpointer{ep}), hgkit.RetryCallback(3))
	return &client{budget: b, call: func(ctx context.Context) bool {
		status, err := retry(ctx, nil)
		return err == nil && status.(int)/100 == 2
	}}, nil
}
