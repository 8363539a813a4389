package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	httptransport "github.com/go-kit/kit/transport/http"
	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/headgate-go/headgate/core"
	hgkit "github.com/headgate-go/headgate/gokit"
	hgresty "github.com/headgate-go/headgate/resty"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
)

const body = `{"ok":true}` + "\n"

// newServer is a loopback server answering every request with a small JSON
// body and no rate-limit headers, so only the clients' own costs differ.
func newServer(tb testing.TB) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	tb.Cleanup(s.Close)
	return s
}

// pooled is a transport that keeps enough idle connections for every
// benchmark goroutine.
func pooled(tb testing.TB) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	tb.Cleanup(t.CloseIdleConnections)
	return t
}

// fast is a budget no request ever waits for; capped adds a concurrency
// cap, so each response body is wrapped to free its slot.
func fast(capped bool) *core.Budget {
	opts := []core.Option{}
	if capped {
		opts = append(opts, core.WithMaxInFlight(1<<20))
	}
	return core.MustBudget(core.Rate{Requests: unlimited, Period: time.Second}, opts...)
}

// A framework builds a client over rt, with headgate when b is not nil,
// and returns one GET of u, its body read and closed.
type framework struct {
	name  string
	build func(u string, rt http.RoundTripper, b *core.Budget) func(context.Context) error
}

func drain(resp *http.Response) error {
	_, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

var frameworks = []framework{
	{"net-http", func(u string, rt http.RoundTripper, b *core.Budget) func(context.Context) error {
		if b != nil {
			rt = core.NewTransport(rt, b)
		}
		c := &http.Client{Transport: rt}
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			return drain(resp)
		}
	}},
	{"resty", func(u string, rt http.RoundTripper, b *core.Budget) func(context.Context) error {
		c := resty.NewWithClient(&http.Client{Transport: rt})
		if b != nil {
			c = hgresty.Use(c, b)
		}
		return func(ctx context.Context) error {
			r, err := c.R().SetContext(ctx).Get(u)
			if err == nil && !r.IsSuccess() {
				err = fmt.Errorf("status %d", r.StatusCode())
			}
			return err
		}
	}},
	{"retryablehttp", func(u string, rt http.RoundTripper, b *core.Budget) func(context.Context) error {
		c := retryablehttp.NewClient()
		c.Logger = nil
		c.HTTPClient.Transport = rt
		if b != nil {
			c = hgretry.Use(c, b)
		}
		return func(ctx context.Context) error {
			req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			return drain(resp)
		}
	}},
	{"gokit", func(u string, rt http.RoundTripper, b *core.Budget) func(context.Context) error {
		tgt, err := url.Parse(u)
		if err != nil {
			panic(err)
		}
		opt := httptransport.SetClient(&http.Client{Transport: rt})
		if b != nil {
			opt = hgkit.SetClient(&http.Client{Transport: rt}, b)
		}
		encode := func(context.Context, *http.Request, any) error { return nil }
		decode := func(_ context.Context, resp *http.Response) (any, error) {
			if err := hgkit.CheckResponse(resp); err != nil {
				return nil, err
			}
			_, err := io.Copy(io.Discard, resp.Body)
			return nil, err
		}
		ep := httptransport.NewClient(http.MethodGet, tgt, encode, decode, opt).Endpoint()
		return func(ctx context.Context) error {
			_, err := ep(ctx, nil)
			return err
		}
	}},
}

// stub is an in-process RoundTripper that answers at once, for the
// transport's own cost with no network in the way.
type stub struct{}

func (stub) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}, nil
}

// BenchmarkTransport is one request through each framework, bare and with
// headgate: over loopback (a real round trip, the ratio users pay), and
// through the in-process stub (the transport's cost alone).
func BenchmarkTransport(b *testing.B) {
	srv := newServer(b)
	for _, f := range frameworks {
		variants := []string{"bare", "headgate"}
		if f.name == "net-http" {
			variants = append(variants, "headgate-capped")
		}
		for _, v := range variants {
			b.Run(f.name+"/"+v, func(b *testing.B) {
				benchCall(b, f.build(srv.URL+"/v1/items", pooled(b), budgetFor(v)))
			})
		}
	}
	for _, v := range []string{"bare", "headgate", "headgate-capped"} {
		b.Run("stub/"+v, func(b *testing.B) {
			benchCall(b, frameworks[0].build("http://stub.invalid/v1/items", stub{}, budgetFor(v)))
		})
	}
}

// BenchmarkTransportParallel is the loopback net/http round trip from
// GOMAXPROCS goroutines at once, bare and with headgate.
func BenchmarkTransportParallel(b *testing.B) {
	srv := newServer(b)
	for _, v := range []string{"bare", "headgate"} {
		b.Run("net-http/"+v, func(b *testing.B) {
			call := frameworks[0].build(srv.URL+"/v1/items", pooled(b), budgetFor(v))
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func budgetFor(variant string) *core.Budget {
	switch variant {
	case "headgate":
		return fast(false)
	case "headgate-capped":
		return fast(true)
	}
	return nil
}

func benchCall(b *testing.B, call func(context.Context) error) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFrameworks checks that every benchmarked client works bare and that
// its headgate variant really spends from the budget: once the budget is
// paused for a minute, a call with a one-second deadline fails at once
// with the budget's error and never reaches the server.
func TestFrameworks(t *testing.T) {
	srv := newServer(t)
	var hits atomic.Int64
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(counting.Close)
	for _, f := range frameworks {
		if err := f.build(counting.URL, pooled(t), nil)(context.Background()); err != nil {
			t.Errorf("%s bare: %v", f.name, err)
		}
		b := fast(true)
		if err := f.build(counting.URL, pooled(t), b)(context.Background()); err != nil {
			t.Errorf("%s headgate: %v", f.name, err)
		}
		b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"60"}}, time.Time{})
		before := hits.Load()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := f.build(counting.URL, pooled(t), b)(ctx)
		cancel()
		if sent := hits.Load() - before; !core.IsBudgetError(err) || sent != 0 {
			t.Errorf("%s headgate, budget paused: err %v, %d requests sent; want the budget's error, none sent", f.name, err, sent)
		}
		if b.InFlight() != 0 {
			t.Errorf("%s headgate: %d slots still held", f.name, b.InFlight())
		}
	}
	for _, v := range []string{"bare", "headgate", "headgate-capped"} {
		if err := frameworks[0].build("http://stub.invalid/", stub{}, budgetFor(v))(context.Background()); err != nil {
			t.Errorf("stub %s: %v", v, err)
		}
	}
}
