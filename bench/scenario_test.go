package bench

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"go.uber.org/ratelimit"
	"golang.org/x/time/rate"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

// The scenarios' batch and server: the demo's (examples/demo), smaller so
// that one batch takes well under a second. The server speaks GitHub's
// headers: X-RateLimit-* with a Unix reset on every response, Retry-After
// on a 429.
const (
	scN       = 200
	scWorkers = 50
	scRate    = 400 // the server's limit, per second
	scBurst   = 40  // the paced clients are configured with it exactly, as with the server's rate
	scPause   = time.Second
)

// A scenario is one way of running the batch.
type scenario struct {
	name   string
	factor int  // the clients are configured at factor × the server's rate
	pause  bool // the server pauses once a third of the batch has arrived
}

var benchScenarios = []scenario{
	{"default", 1, false},
	{"misconfigured", 2, false},
	{"pause", 1, true},
}

// ideal is the shortest makespan the server's limit allows: (n - burst) ×
// interval, plus the pause, after which a second burst goes at once.
func (s scenario) ideal() time.Duration {
	interval := time.Second / scRate
	if s.pause {
		return time.Duration(scN-2*scBurst)*interval + scPause
	}
	return time.Duration(scN-scBurst) * interval
}

// A pacer is a client-side limiter in front of a plain net/http client,
// configured at the given rate; headgate sits in the transport instead.
type pacer struct {
	name string
	new  func(rps, burst int, base http.RoundTripper) (*http.Client, func(context.Context) error, *core.Budget)
}

var pacers = []pacer{
	{"none", func(_, _ int, base http.RoundTripper) (*http.Client, func(context.Context) error, *core.Budget) {
		return &http.Client{Transport: base}, nil, nil
	}},
	{"xrate", func(rps, burst int, base http.RoundTripper) (*http.Client, func(context.Context) error, *core.Budget) {
		return &http.Client{Transport: base}, rate.NewLimiter(rate.Limit(rps), burst).Wait, nil
	}},
	// uber has no burst: its slack (10 by default) only lets a caller
	// catch up after idling.
	{"uber", func(rps, _ int, base http.RoundTripper) (*http.Client, func(context.Context) error, *core.Budget) {
		l := ratelimit.New(rps)
		return &http.Client{Transport: base}, func(context.Context) error { l.Take(); return nil }, nil
	}},
	// failsafe's smooth limiter spaces permits evenly, with no burst.
	{"failsafe", func(rps, _ int, base http.RoundTripper) (*http.Client, func(context.Context) error, *core.Budget) {
		l := ratelimiter.NewSmoothBuilder[any](uint(rps), time.Second).WithMaxWaitTime(time.Minute).Build()
		return &http.Client{Transport: base}, l.AcquirePermit, nil
	}},
	{"headgate", func(rps, burst int, base http.RoundTripper) (*http.Client, func(context.Context) error, *core.Budget) {
		b := core.MustBudget(core.PerSecond(rps), core.WithBurst(burst), core.WithMaxInFlight(16))
		return &http.Client{Transport: core.NewTransport(base, b)}, nil, b
	}},
}

// outcome is what the server saw of one batch.
type outcome struct {
	sent, refused, inPause, failed int
	makespan                       time.Duration
	leaked                         int
}

// runBatch sends the batch through p against a fresh server.
func runBatch(tb testing.TB, s scenario, p pacer) outcome {
	srv, err := quotatest.NewServer(quotatest.Config{Requests: scRate, Period: time.Second, Burst: scBurst,
		Headers: quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds})
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Close()
	pool := http.DefaultTransport.(*http.Transport).Clone()
	pool.MaxIdleConnsPerHost = scWorkers
	defer pool.CloseIdleConnections()
	client, wait, budget := p.new(scRate*s.factor, scBurst, pool)
	u := srv.URL + "/v1/items"

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var next, failed atomic.Int64
	stop := make(chan struct{})
	var bg, wg sync.WaitGroup
	if s.pause {
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Microsecond):
				}
				if srv.Count() >= scN/3 {
					srv.PauseFor(scPause)
					return
				}
			}
		})
	}
	start := time.Now()
	for range scWorkers {
		wg.Go(func() {
			for next.Add(1) <= scN {
				if !call(ctx, client, wait, u) {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	o := outcome{makespan: time.Since(start), failed: int(failed.Load())}
	close(stop)
	bg.Wait()
	for _, a := range srv.Arrivals() {
		o.sent++
		if a.Status == http.StatusTooManyRequests {
			o.refused++
		}
		if a.Outcome == quotatest.RefusedPause {
			o.inPause++
		}
	}
	if budget != nil {
		o.leaked = budget.InFlight()
	}
	return o
}

// call waits on the pacer, if any, and sends one GET; true for a 2xx.
func call(ctx context.Context, c *http.Client, wait func(context.Context) error, u string) bool {
	if wait != nil && wait(ctx) != nil {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// BenchmarkScenario runs the demo's scenarios end to end: one op is one
// batch of scN calls from scWorkers goroutines against a loopback server
// enforcing scRate/s, burst scBurst. ns/op is the batch's makespan; the
// custom metrics are per batch: 429s/op, sent/op (server arrivals),
// failed/op (calls that did not end in a 2xx), makespan/ideal and, in the
// pause scenario, inpause/op (requests that arrived during the pause).
// Run it with -benchtime=1x: each op takes a second or so.
func BenchmarkScenario(b *testing.B) {
	for _, s := range benchScenarios {
		for _, p := range pacers {
			b.Run(s.name+"/"+p.name, func(b *testing.B) {
				var sum outcome
				for b.Loop() {
					o := runBatch(b, s, p)
					if o.leaked != 0 {
						b.Fatalf("%d budget slots still held", o.leaked)
					}
					sum.sent += o.sent
					sum.refused += o.refused
					sum.inPause += o.inPause
					sum.failed += o.failed
					sum.makespan += o.makespan
				}
				n := float64(b.N)
				b.ReportMetric(float64(sum.refused)/n, "429s/op")
				b.ReportMetric(float64(sum.sent)/n, "sent/op")
				b.ReportMetric(float64(sum.failed)/n, "failed/op")
				b.ReportMetric(float64(sum.makespan)/n/float64(s.ideal()), "makespan/ideal")
				if s.pause {
					b.ReportMetric(float64(sum.inPause)/n, "inpause/op")
				}
			})
		}
	}
}
