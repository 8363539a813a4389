package matrix

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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

// maxInFlight is every headgate client's concurrency cap.
const maxInFlight = 16

// clientEnv is what a client is built from.
type clientEnv struct {
	url         string // the server's base URL
	rate, burst int    // what the client is told
	learn       bool   // told no rate
	tries       int    // tries per call, the first included
	base        http.RoundTripper
	observer    core.Observer // every headgate budget's (nil: none)
}

// client makes the batch's calls.
type client struct {
	call   func(ctx context.Context, id int) bool // true when the call ended in a 2xx
	budget *core.Budget                           // headgate's, nil for the baseline
}

// ClientSpec names a client and builds it.
type ClientSpec struct {
	Name     string
	Headgate bool
	build    func(clientEnv) (*client, error)
}

// Clients are the matrix's clients, in table order.
var Clients = []ClientSpec{
	{Name: "x/time/rate + Retry-After (baseline)", build: baselineClient},
	{Name: "headgate transport", Headgate: true, build: transportClient},
	{Name: "hgresty", Headgate: true, build: restyClient},
	{Name: "hgretry", Headgate: true, build: retryClient},
	{Name: "hgkit", Headgate: true, build: kitClient},
}

// ClientByName returns the client called name, or whose name starts with it.
func ClientByName(name string) (ClientSpec, bool) {
	for _, c := range Clients {
		if c.Name == name || name != "" && strings.HasPrefix(c.Name, name) {
			return c, true
		}
	}
	return ClientSpec{}, false
}

func (e clientEnv) callURL(id int) string { return e.url + callPath(id) }

// newBudget is every headgate client's budget: the rate and burst it was
// told, exactly (no headroom), or a learning budget.
func newBudget(e clientEnv) (*core.Budget, error) {
	opts := []core.Option{core.WithMaxInFlight(maxInFlight), core.WithObserver(e.observer)}
	if e.learn { // told no rate: it learns the server's
		return core.NewLearningBudget(opts...)
	}
	return core.NewBudget(core.PerSecond(e.rate), append(opts, core.WithBurst(e.burst))...)
}

// get sends one GET and reads the response to its end; it returns the
// response (its body closed) or nil.
func get(ctx context.Context, hc *http.Client, u string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

func refusal(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// baselineClient is what a Go user writes without headgate: an
// x/time/rate limiter at the told rate and burst (rate.Inf when told
// none), and each goroutine that gets a 429 sleeping its own Retry-After
// (1 s when there is none) before it waits its turn again.
func baselineClient(e clientEnv) (*client, error) {
	limit := rate.Limit(e.rate)
	if e.learn {
		limit = rate.Inf
	}
	lim := rate.NewLimiter(limit, e.burst)
	hc := &http.Client{Transport: e.base}
	return &client{call: func(ctx context.Context, id int) bool {
		for range e.tries {
			if lim.Wait(ctx) != nil {
				return false
			}
			resp := get(ctx, hc, e.callURL(id))
			if resp == nil {
				return false
			}
			if !refusal(resp.StatusCode) {
				return resp.StatusCode/100 == 2
			}
			t := time.NewTimer(parseRetryAfter(resp.Header.Get("Retry-After")))
			select {
			case <-ctx.Done():
				t.Stop()
				return false
			case <-t.C:
			}
		}
		return false
	}}, nil
}

// parseRetryAfter reads delta-seconds or an HTTP-date; 1 s when absent or bad.
func parseRetryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return time.Second
}

// transportClient is core.NewTransport under a plain client; the caller
// tries a refused call again at once, and the budget makes it wait.
func transportClient(e clientEnv) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: core.NewTransport(e.base, b)}
	return &client{budget: b, call: func(ctx context.Context, id int) bool {
		for range e.tries {
			resp := get(ctx, hc, e.callURL(id))
			if resp == nil {
				return false
			}
			if !refusal(resp.StatusCode) {
				return resp.StatusCode/100 == 2
			}
		}
		return false
	}}, nil
}

// restyClient is resty v2 with hgresty.Use and its retries on.
func restyClient(e clientEnv) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	rc := hgresty.Use(resty.NewWithClient(&http.Client{Transport: e.base}), b).SetRetryCount(e.tries - 1)
	return &client{budget: b, call: func(ctx context.Context, id int) bool {
		r, err := rc.R().SetContext(ctx).Get(e.callURL(id))
		return err == nil && r.IsSuccess()
	}}, nil
}

// retryClient is go-retryablehttp with hgretry.Use and its defaults
// otherwise (logging off).
func retryClient(e clientEnv) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryMax = e.tries - 1
	c.HTTPClient.Transport = e.base
	c = hgretry.Use(c, b)
	return &client{budget: b, call: func(ctx context.Context, id int) bool {
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, e.callURL(id), nil)
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
	}}, nil
}

// kitClient is hgkit's recommended wiring: the budget under the go-kit
// HTTP client (SetClient), a decoder that turns a 429 into an error
// (CheckResponse), and lb.Retry with RetryCallback; the budget does the
// waiting between tries.
func kitClient(e clientEnv) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(e.url)
	if err != nil {
		return nil, err
	}
	encode := func(_ context.Context, r *http.Request, id any) error {
		r.URL.Path = callPath(id.(int))
		return nil
	}
	decode := func(_ context.Context, resp *http.Response) (any, error) {
		if err := hgkit.CheckResponse(resp); err != nil {
			return nil, err
		}
		_, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	ep := httptransport.NewClient(http.MethodGet, u, encode, decode,
		hgkit.SetClient(&http.Client{Transport: e.base}, b)).Endpoint()
	retry := lb.RetryWithCallback(time.Minute, lb.NewRoundRobin(sd.FixedEndpointer{ep}), hgkit.RetryCallback(e.tries))
	return &client{budget: b, call: func(ctx context.Context, id int) bool {
		status, err := retry(ctx, id)
		return err == nil && status.(int)/100 == 2
	}}, nil
}
