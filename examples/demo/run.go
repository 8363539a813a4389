package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// config is one demo run's setup: the server's real limit and the batch.
type config struct {
	n, workers  int                   // the batch: n calls from workers goroutines
	rate, burst int                   // the server's limit: rate requests per second, burst back to back
	pause       time.Duration         // the pause scenario's server pause
	headers     quotatest.HeaderStyle // what the server sends
	progress    io.Writer             // the live progress line; nil for none
	// inMemory serves the batch from a quotatest.Provider behind its
	// in-memory transport instead of a loopback server, so a test can run
	// it in a testing/synctest bubble, where its timing is exact.
	inMemory bool
}

// interval is the server's emission interval.
func (c config) interval() time.Duration { return time.Second / time.Duration(c.rate) }

// ideal is the shortest makespan the server's limit allows for the batch:
// the burst at once, then one request per interval, (n - burst) × interval
// for GCRA. With a pause, the pause is added, and the server, which forgets
// everything spent when a pause ends, lets a second burst go at once.
func (c config) ideal(s scenario) time.Duration {
	k := max(0, c.n-c.burst)
	if !s.pause {
		return time.Duration(k) * c.interval()
	}
	k = max(0, k-c.burst)
	return time.Duration(k)*c.interval() + c.pause
}

// pauseAfter is how many arrivals the server lets in before it pauses.
func (c config) pauseAfter() int { return max(1, c.n/3) }

// tick is one arrival at the server, from the start of its run.
type tick struct {
	at      time.Duration
	refused bool // a 429
}

// result is what one client did in one scenario, all measured.
type result struct {
	scenario       scenario
	client         string
	headgate       bool
	calls          int           // calls made (the batch)
	failed         int           // calls that did not end in a 2xx response
	sent           int           // requests that reached the server (retries included)
	refused        int           // 429s the server sent
	inPause        int           // requests that arrived during the server's pause
	afterRefusal   int           // of those, sent after the client had received its first 429 of the pause
	refusedInPause bool          // the client received a 429 of the pause
	makespan       time.Duration // from the first call to the last call's return
	ideal          time.Duration // the server's limit's best makespan
	pauseAt        time.Duration // when the pause began, from the start of the run (pause scenario)
	paused         bool          // the pause happened
	leaked         int           // budget slots still held after the run (headgate rows); must be 0
	ticks          []tick
}

// ratio is makespan ÷ ideal.
func (r result) ratio() float64 {
	if r.ideal <= 0 {
		return 0
	}
	return float64(r.makespan) / float64(r.ideal)
}

// watch is the shared base transport's front: it records when the client
// first received a 429 for a request it sent during the server's pause,
// the moment the client learned of the pause.
type watch struct {
	next       http.RoundTripper
	pauseStart atomic.Int64 // unix nanoseconds; 0 before the pause
	refused    atomic.Int64 // unix nanoseconds; 0 until then
}

func (w *watch) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := time.Now().UnixNano()
	resp, err := w.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		if ps := w.pauseStart.Load(); ps != 0 && sent >= ps {
			w.refused.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
	return resp, err
}

// run sends the batch through one client against a fresh server and
// measures what happened.
func run(cfg config, sc scenario, spec clientSpec) (result, error) {
	limit := quotatest.Config{Requests: cfg.rate, Period: time.Second, Burst: cfg.burst, Headers: cfg.headers}
	var srv *quotatest.Provider
	var base http.RoundTripper
	url := "http://demo.test"
	if cfg.inMemory {
		// A loopback round trip's worth of latency, so that time passes
		// for a client that never waits (the no-limiter rows).
		limit.Latency = time.Millisecond
		p, err := quotatest.New(limit)
		if err != nil {
			return result{}, err
		}
		srv, base = p, p.Transport()
	} else {
		s, err := quotatest.NewServer(limit)
		if err != nil {
			return result{}, err
		}
		defer s.Close()
		// Every client gets the same connection pool, big enough for the
		// workers, so only the way it spends the limit differs.
		pool := http.DefaultTransport.(*http.Transport).Clone()
		pool.MaxIdleConnsPerHost = cfg.workers
		defer pool.CloseIdleConnections()
		srv, base, url = s.Provider, pool, s.URL
	}
	w := &watch{next: base}

	c, err := spec.build(env{
		url:   url + "/v1/items",
		rate:  cfg.rate * sc.factor,
		burst: cfg.burst, // the server's exact burst: no headroom
		base:  w,
	})
	if err != nil {
		return result{}, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var next, done, failed atomic.Int64
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var pauseAt time.Time // written by the pause goroutine, read after bg.Wait
	start := time.Now()
	if sc.pause {
		bg.Go(func() {
			t := time.NewTicker(200 * time.Microsecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				if srv.Count() >= cfg.pauseAfter() {
					pauseAt = time.Now()
					w.pauseStart.Store(pauseAt.UnixNano())
					srv.PauseFor(cfg.pause)
					return
				}
			}
		})
	}
	if cfg.progress != nil {
		bg.Go(func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			line := func() {
				fmt.Fprintf(cfg.progress, "\r\033[K  %-14s %-28s %4d/%d calls done · %4d sent · %4d × 429 · %5.1fs",
					sc.name, spec.name, done.Load(), cfg.n, srv.Count(), srv.Refused(), time.Since(start).Seconds())
			}
			for {
				select {
				case <-stop:
					fmt.Fprint(cfg.progress, "\r\033[K")
					return
				case <-t.C:
					line()
				}
			}
		})
	}

	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Go(func() {
			for next.Add(1) <= int64(cfg.n) {
				if !c.call(ctx) {
					failed.Add(1)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	makespan := time.Since(start)
	close(stop)
	bg.Wait()
	if c.close != nil {
		c.close()
	}

	r := result{
		scenario: sc,
		client:   spec.name,
		headgate: spec.headgate,
		calls:    cfg.n,
		failed:   int(failed.Load()),
		makespan: makespan,
		ideal:    cfg.ideal(sc),
	}
	if !pauseAt.IsZero() {
		r.paused, r.pauseAt = true, pauseAt.Sub(start)
	}
	refusedAt := w.refused.Load()
	r.refusedInPause = refusedAt != 0
	for _, a := range srv.Arrivals() {
		r.sent++
		t := tick{at: a.At.Sub(start), refused: a.Status == http.StatusTooManyRequests}
		if t.refused {
			r.refused++
		}
		if a.Outcome == quotatest.RefusedPause {
			r.inPause++
			if refusedAt != 0 && a.At.UnixNano() > refusedAt {
				r.afterRefusal++
			}
		}
		r.ticks = append(r.ticks, t)
	}
	if c.budget != nil {
		r.leaked = c.budget.InFlight()
	}
	return r, nil
}
