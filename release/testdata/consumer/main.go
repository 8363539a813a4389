// Command consumer is what a new user writes: it imports every headgate
// library module at its published version, wires the three adapters,
// redisstore and telemetry as the README shows, and sends one call through
// each to a loopback server. make release-check builds and runs it outside
// the workspace, against modules packed as a release would publish them.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	httptransport "github.com/go-kit/kit/transport/http"
	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/ratelimit"
	hgkit "github.com/headgate-go/headgate/gokit"
	"github.com/headgate-go/headgate/redisstore"
	hgresty "github.com/headgate-go/headgate/resty"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
	"github.com/headgate-go/headgate/telemetry"
)

func main() {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "99")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Telemetry: the budget's events as OpenTelemetry metrics.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := telemetry.NewObserver(mp)
	check(err)
	// Burst 1: the second and third calls wait their turn, which the
	// observer records.
	budget, err := core.NewBudget(core.PerSecond(50), core.WithBurst(1), core.WithMaxInFlight(4), core.WithObserver(obs.Observe))
	check(err)

	// The three adapters, one entry point each, the same shape:
	// (client, budget, transport options...).
	rc := hgresty.Use(resty.New(), budget).SetRetryCount(3)
	resp, err := rc.R().SetContext(ctx).Get(srv.URL + "/resty")
	check(err)
	want(resp.StatusCode(), "resty")

	hc := hgretry.Use(retryablehttp.NewClient(), budget)
	hc.Logger = nil
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/retryablehttp", nil)
	check(err)
	hresp, err := hc.Do(req)
	check(err)
	hresp.Body.Close()
	want(hresp.StatusCode, "retryablehttp")

	items := httptransport.NewClient(http.MethodGet, mustURL(srv.URL+"/gokit"),
		func(context.Context, *http.Request, interface{}) error { return nil },
		func(_ context.Context, r *http.Response) (interface{}, error) {
			if err := hgkit.CheckResponse(r); err != nil {
				return nil, err
			}
			return r.StatusCode, nil
		},
		hgkit.SetClient(nil, budget),
	).Endpoint()
	status, err := items(ctx, nil)
	check(err)
	want(status.(int), "gokit")

	// redisstore: one budget for a fleet. Nothing listens on this address,
	// so the store fails open at a quarter of the rate and the call goes.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	store, err := redisstore.New(rdb, "headgate:consumer", redisstore.WithFailOpen(0.25))
	check(err)
	fleet := core.MustBudget(core.PerHour(5000), core.WithStore(store))
	fc := &http.Client{Transport: core.NewTransport(nil, fleet)}
	fresp, err := fc.Get(srv.URL + "/redisstore")
	check(err)
	fresp.Body.Close()
	want(fresp.StatusCode, "redisstore (failing open)")

	// ratelimit alone: a response's rate-limit headers, read with no budget.
	if fb := ratelimit.Parse(fresp.StatusCode, fresp.Header, time.Now()); fb.Remaining != 99 || fb.Limit != 100 {
		log.Fatalf("ratelimit: remaining %d of %d, want 99 of 100", fb.Remaining, fb.Limit)
	}

	var rm metricdata.ResourceMetrics
	check(reader.Collect(ctx, &rm))
	var names []string
	waits := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
			waits = waits || m.Name == telemetry.MetricWaitDuration
		}
	}
	if !waits {
		log.Fatalf("telemetry: %s not recorded (recorded: %v)", telemetry.MetricWaitDuration, names)
	}
	if n := served.Load(); n != 4 {
		log.Fatalf("the server saw %d requests, want 4", n)
	}
	fmt.Printf("consumer: 4 calls through resty, retryablehttp, go-kit and a redisstore budget; telemetry recorded %s\n", strings.Join(names, ", "))
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	check(err)
	return u
}

func want(status int, via string) {
	if status != http.StatusOK {
		log.Fatalf("%s: status %d, want 200", via, status)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
