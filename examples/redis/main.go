// Command redis shows a fleet sharing one headgate budget in Redis
// (redisstore): four worker processes (this program, re-executed) on one
// key share a budget of requests and tokens, and it prints what the fleet
// was admitted against the bound; then three workers — each with its own
// Redis client, store and budget, as separate processes would have — call
// one rate-limited server (core/quotatest) at one budget's pace, a 429 one
// of them hears pauses all three, and when Redis goes away they fall back
// to a third of the rate each. It needs a Redis server: it starts
// redis-server on a free loopback port when the binary is on PATH, or uses
// REDIS_ADDR. It runs in about nine seconds.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/redisstore"
)

type worker struct {
	store  *redisstore.Store
	budget *core.Budget
	client *http.Client
	sent   atomic.Int64
}

func main() {
	if os.Getenv(workerEnv) != "" {
		fleetWorker()
		return
	}
	addr, stop, owned := findRedis()
	defer stop()
	redis.SetLogger(quiet{}) // go-redis logs every failed dial while Redis is down
	fleet(addr)

	srv, err := quotatest.NewServer(quotatest.Config{Requests: 20, Period: time.Second, Headers: quotatest.RetryAfterMillis})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println("server:", srv.Provider)

	key := "headgate:example:" + strconv.Itoa(os.Getpid()) // one quota: the same key in every process
	var failures atomic.Int64
	workers := make([]*worker, 3)
	for i := range workers {
		rc := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer rc.Close()
		store, err := redisstore.New(rc, key,
			redisstore.WithFailOpen(1.0/3), // three workers: a third of the rate each when Redis is down
			redisstore.WithTimeout(100*time.Millisecond),
			redisstore.WithOnFailure(func(error) { failures.Add(1) }))
		if err != nil {
			log.Fatal(err)
		}
		// The provider's rate, with a burst under the provider's as slack
		// for network jitter.
		budget := core.MustBudget(core.PerSecond(20), core.WithBurst(15), core.WithStore(store))
		workers[i] = &worker{store: store, budget: budget, client: &http.Client{Transport: core.NewTransport(nil, budget)}}
	}

	// 2. Three workers, four goroutines each, as fast as they may for 1.5 s.
	run(workers, srv.URL, 1500*time.Millisecond)
	fmt.Printf("2. three workers, one budget in Redis: sent %d+%d+%d=%d in 1.5s, refused %d, within 20/s: %v\n",
		workers[0].sent.Load(), workers[1].sent.Load(), workers[2].sent.Load(), srv.Count(), srv.Refused(),
		srv.CheckPacing(15, 50*time.Millisecond, 10*time.Millisecond) == nil)

	// 3. The server pauses: the worker that hears the 429 pauses them all.
	srv.Reset()
	srv.PauseFor(time.Second)
	get(workers[0], srv.URL)
	fmt.Printf("3. worker 0 got a %d; pause seen by workers 0, 1, 2: %v %v %v\n", srv.Arrivals()[0].Status,
		workers[0].budget.PauseRemaining() > 900*time.Millisecond,
		workers[1].budget.PauseRemaining() > 900*time.Millisecond,
		workers[2].budget.PauseRemaining() > 900*time.Millisecond)
	start := time.Now()
	get(workers[2], srv.URL)
	fmt.Printf("   worker 2's next request waited %v, and got a %d\n", time.Since(start).Round(100*time.Millisecond), srv.Arrivals()[1].Status)

	// 4. Redis goes away: each worker falls back to a third of the rate.
	if !owned {
		fmt.Println("4. skipped: this program did not start Redis, so it will not stop it")
		return
	}
	stop()
	srv.Reset()
	for _, w := range workers {
		w.sent.Store(0)
	}
	run(workers, srv.URL, 1500*time.Millisecond)
	fmt.Printf("4. Redis stopped: workers failed open and sent %d+%d+%d=%d in 1.5s (%d failure events), refused %d\n",
		workers[0].sent.Load(), workers[1].sent.Load(), workers[2].sent.Load(), srv.Count(), failures.Load(), srv.Refused())
}

// run sends GETs from four goroutines per worker for d.
func run(workers []*worker, url string, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range workers {
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/items", nil)
					resp, err := w.client.Do(req)
					if err != nil {
						continue // the next turn is past the end: ctx is done
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					w.sent.Add(1)
				}
			})
		}
	}
	wg.Wait()
}

func get(w *worker, url string) {
	resp, err := w.client.Get(url + "/v1/items")
	if err != nil {
		log.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// findRedis returns the address of a Redis server, a function stopping it
// and whether this program started it.
func findRedis() (addr string, stop func(), owned bool) {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		fmt.Println("redis: REDIS_ADDR", addr)
		return addr, func() {}, false
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Println("This example needs Redis: install redis-server (e.g. apt-get install redis-server)")
		fmt.Println("or run it with REDIS_ADDR=host:port pointing to a server it may write keys to.")
		os.Exit(0)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	dir, err := os.MkdirTemp("", "headgate-redis")
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
			os.RemoveAll(dir)
		})
	}
	addr = "127.0.0.1:" + port
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := 0; c.Ping(context.Background()).Err() != nil; i++ {
		if i == 100 {
			stop()
			log.Fatal("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("redis: started redis-server on", addr)
	return addr, stop, true
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
