// Command observability wires a headgate budget to log/slog and to
// OpenTelemetry metrics exported for Prometheus, runs a short batch against
// a local rate-limited server (core/quotatest) that pauses once, then
// scrapes its own /metrics over loopback and prints the headgate_* series.
// Every kind of budget event appears: slot waits, paced and throttled
// turns, a pushback, the pause, the rate cut and its recovery, and a
// response body left unclosed. It runs in about two seconds.
//
//	go run ./observability -rate 20/s
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/telemetry"
)

func main() {
	// The rate comes from configuration: a flag here, a config file field
	// elsewhere (core.Rate is a flag.Value and an encoding.TextUnmarshaler).
	rate := core.PerSecond(20)
	flag.Var(&rate, "rate", "the budget's rate, e.g. 20/s, 600/min, 10/500ms")
	flag.Parse()

	// Logs: every event, waits included (DEBUG), without timestamps so the
	// output reads as a story.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			if a.Value.Kind() == slog.KindDuration { // real time: round for reading
				return slog.Duration(a.Key, a.Value.Duration().Round(time.Millisecond))
			}
			return a
		},
	}))

	// Metrics: an OpenTelemetry SDK meter provider read by the Prometheus
	// exporter, served on loopback.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutTargetInfo(), otelprom.WithoutScopeInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	metricsURL := serveMetrics(registry)

	obs, err := telemetry.NewObserver(mp)
	if err != nil {
		log.Fatal(err)
	}
	budget, err := core.NewBudget(rate,
		core.WithName("orders"),
		core.WithBurst(2),
		core.WithMaxInFlight(2),
		core.WithAdaptive(core.Adaptive{Increase: 0.5}), // recover within the demo
		core.WithObserver(core.Observers(core.SlogObserver(logger), obs.Observe)),
	)
	if err != nil {
		log.Fatal(err)
	}
	reg, err := obs.Register(budget)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()

	srv, err := quotatest.NewServer(quotatest.Config{Requests: 50, Period: time.Second, Latency: 20 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := &http.Client{Transport: core.NewTransport(srv.Client().Transport, budget)}

	fmt.Printf("== budget %v, burst 2, 2 slots; server 50/s\n", rate)
	fmt.Println("== 1. six calls at once: slot waits and paced turns")
	batch(client, srv.URL, 6)

	fmt.Println("== 2. the server pauses for 1s: a 429, the pause, a rate cut, throttled turns, the recovery")
	srv.PauseFor(time.Second)
	batch(client, srv.URL, 6)

	fmt.Println("== 3. a response body left unclosed: the garbage collector frees its slot")
	func() {
		resp, err := client.Get(srv.URL + "/v1/orders")
		if err != nil {
			log.Fatal(err)
		}
		_ = resp.StatusCode // never closed: a bug the log and the metrics show
	}()
	for deadline := time.Now().Add(5 * time.Second); budget.InFlight() > 0 && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}

	fmt.Printf("== server: %d requests, %d refused; slots held now: %d\n", srv.Count(), srv.Refused(), budget.InFlight())
	fmt.Println("== scraped from", metricsURL)
	printMetrics(metricsURL)
}

// batch sends n GETs at once; a 429 is sent again (through the budget,
// which waits out the server's pause) up to three times.
func batch(c *http.Client, base string, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for range 4 {
				resp, err := c.Get(base + "/v1/orders")
				if err != nil {
					log.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusTooManyRequests {
					return
				}
			}
		})
	}
	wg.Wait()
}

// serveMetrics serves the registry on a loopback port and returns the URL
// of its /metrics.
func serveMetrics(registry *prometheus.Registry) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	go http.Serve(ln, mux)
	return "http://" + ln.Addr().String() + "/metrics"
}

// printMetrics scrapes url and prints its headgate_* lines, leaving out the
// histogram's buckets.
func printMetrics(url string) {
	resp, err := http.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	buckets := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !strings.HasPrefix(line, "headgate_"):
		case strings.Contains(line, "_bucket{"):
			buckets++
		default:
			fmt.Println("  ", line)
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("   (and %d histogram bucket lines)\n", buckets)
}
