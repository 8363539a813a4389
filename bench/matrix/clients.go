package matrix

import (
	"context"
	"errors"
	"fmt"
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
	url         string        // the server's base URL
	rate, burst int           // what the client is configured with: rate requests per period
	period      time.Duration // the configured rate's period; 0 is a second
	learn       bool          // configured with no rate
	tries       int           // tries per call, the first included
	inFlight    int           // a headgate budget's concurrency cap (core.WithMaxInFlight); 0: none
	base        http.RoundTripper
	observer    core.Observer // every headgate budget's (nil: none)
}

// per is the configured rate's period.
func (e clientEnv) per() time.Duration {
	if e.period <= 0 {
		return time.Second
	}
	return e.period
}

// client makes the batch's calls.
type client struct {
	// call makes one call: nil when it ended in a 2xx; else errRefused
	// (refused on every try), errStatus, or the error that ended it — one
	// that matches context.DeadlineExceeded when the caller's deadline did.
	call   func(ctx context.Context, id int) error
	budget *core.Budget // headgate's, nil for the baseline
}

var (
	errRefused = errors.New("matrix: refused on every try")
	errStatus  = errors.New("matrix: not a 2xx")
)

// statusErr is nil for a 2xx, errStatus for any other status.
func statusErr(code int) error {
	if code/100 == 2 {
		return nil
	}
	return fmt.Errorf("%w: %d", errStatus, code)
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
// configured with, exactly (no headroom), or a learning budget.
func newBudget(e clientEnv) (*core.Budget, error) {
	opts := []core.Option{core.WithObserver(e.observer)}
	if e.inFlight > 0 {
		opts = append(opts, core.WithMaxInFlight(e.inFlight))
	}
	if e.learn { // no rate configured: it learns the server's
		return core.NewLearningBudget(opts...)
	}
	return core.NewBudget(core.Rate{Requests: e.rate, Period: e.per()}, append(opts, core.WithBurst(e.burst))...)
}

// get sends one GET and reads the response to its end; it returns the
// response (its body closed) or the error that ended the exchange.
func get(ctx context.Context, hc *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp, nil
}

func refusal(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// baselineClient is what a Go user writes without headgate: an
// x/time/rate limiter at the configured rate and burst (rate.Inf with no
// rate configured), and each goroutine that gets a 429 sleeping its own
// Retry-After (1 s when there is none) before it waits its turn again.
func baselineClient(e clientEnv) (*client, error) {
	limit := rate.Limit(float64(e.rate) / e.per().Seconds())
	if e.learn {
		limit = rate.Inf
	}
	lim := rate.NewLimiter(limit, e.burst)
	hc := &http.Client{Transport: e.base}
	return &client{call: func(ctx context.Context, id int) error {
		for range e.tries {
			if err := lim.Wait(ctx); err != nil {
				if _, ok := ctx.Deadline(); ok && ctx.Err() == nil { // its turn comes past the deadline
					return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
				}
				return err
			}
			resp, err := get(ctx, hc, e.callURL(id))
			if err != nil {
				return err
			}
			if !refusal(resp.StatusCode) {
				return statusErr(resp.StatusCode)
			}
			t := time.NewTimer(parseRetryAfter(resp.Header.Get("Retry-After")))
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		return errRefused
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
	return &client{budget: b, call: func(ctx context.Context, id int) error {
		for range e.tries {
			resp, err := get(ctx, hc, e.callURL(id))
			if err != nil {
				return err
			}
			if !refusal(resp.StatusCode) {
				return statusErr(resp.StatusCode)
			}
		}
		return errRefused
	}}, nil
}

// restyClient is resty v2 with hgresty.Use and its retries on.
func restyClient(e clientEnv) (*client, error) {
	b, err := newBudget(e)
	if err != nil {
		return nil, err
	}
	rc := hgresty.Use(resty.NewWithClient(&http.Client{Transport: e.base}), b).SetRetryCount(e.tries - 1)
	return &client{budget: b, call: func(ctx context.Context, id int) error {
		r, err := rc.R().SetContext(ctx).Get(e.callURL(id))
		if err != nil {
			return err
		}
		return statusErr(r.StatusCode())
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
	return &client{budget: b, call: func(ctx context.Context, id int) error {
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, e.callURL(id), nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return statusErr(resp.StatusCode)
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
	return &client{budget: b, call: func(ctx context.Context, id int) error {
		status, err := retry(ctx, id)
		if err != nil {
			return err
		}
		return statusErr(status.(int))
	}}, nil
}
