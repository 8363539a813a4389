package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/redisstore"
)

// The fleet: this program, re-executed with workerEnv set, is one worker
// process; every worker builds its own Redis client, store and budget on
// one key, as the pods of a deployment would.
const workerEnv = "HEADGATE_EXAMPLE_WORKER"

// The fleet's one budget, as an LLM key's: 40 requests/s (burst 10) and
// 4,000 tokens/s (burst 2,000). Every call uses 100 to 300 tokens, so the
// tokens bind.
const (
	fleetProcs   = 4
	fleetReqs    = 40
	fleetBurst   = 10
	fleetTokens  = 4000
	fleetTokBurs = 2000
	fleetRun     = 3 * time.Second
)

// workerReport is what a worker prints: its calls and the tokens they used.
type workerReport struct {
	Calls, Tokens int64
	Errors        int
}

// fleet runs fleetProcs worker processes against one provider that
// enforces the budget, and prints what the fleet was admitted against the
// bound (burst + rate × W).
func fleet(addr string) {
	// The provider enforces the same limits, with room for 50 ms of jitter.
	srv, err := quotatest.NewServer(quotatest.Config{Requests: fleetReqs, Period: time.Second, Burst: fleetBurst + 2,
		Tokens: fleetTokens, TokenBurst: fleetTokBurs + fleetTokens/20})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	key := "headgate:example:fleet:" + strconv.Itoa(os.Getpid())
	start := time.Now().Add(500 * time.Millisecond) // every worker starts at once
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	var outs []*bufio.Reader
	var cmds []*exec.Cmd
	for range fleetProcs {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), workerEnv+"=1", "HG_ADDR="+addr, "HG_KEY="+key, "HG_URL="+srv.URL,
			"HG_START="+strconv.FormatInt(start.UnixNano(), 10))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			log.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		outs, cmds = append(outs, bufio.NewReader(out)), append(cmds, cmd)
	}
	var calls, tokens []int64
	for i, out := range outs {
		var r workerReport
		if err := json.NewDecoder(out).Decode(&r); err != nil {
			log.Fatalf("worker %d: %v", i, err)
		}
		cmds[i].Wait()
		calls, tokens = append(calls, r.Calls), append(tokens, r.Tokens)
	}
	w := fleetRun.Seconds()
	reqBound := fleetBurst + fleetReqs*w
	tokBound := fleetTokBurs + fleetTokens*w
	sum := func(v []int64) (n int64) {
		for _, x := range v {
			n += x
		}
		return n
	}
	fmt.Printf("1. %d worker processes, one budget in Redis (%d req/s, burst %d; %d tokens/s, burst %d), for %v:\n",
		fleetProcs, fleetReqs, fleetBurst, fleetTokens, fleetTokBurs, fleetRun)
	fmt.Printf("   requests: %v = %d, %.0f%% of the bound %.0f (burst + rate × W)\n", calls, sum(calls), 100*float64(sum(calls))/reqBound, reqBound)
	fmt.Printf("   tokens:   %v = %d, %.0f%% of the bound %.0f\n", tokens, sum(tokens), 100*float64(sum(tokens))/tokBound, tokBound)
	fmt.Printf("   refused by the provider: %d\n", srv.Refused())
}

// fleetWorker is one process of the fleet: four goroutines call the provider
// for fleetRun, each call reserving its tokens before it goes and
// committing them after.
func fleetWorker() {
	env := os.Getenv
	rc := redis.NewClient(&redis.Options{Addr: env("HG_ADDR"), ContextTimeoutEnabled: true})
	defer rc.Close()
	store, err := redisstore.New(rc, env("HG_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	budget := core.MustBudget(core.PerSecond(fleetReqs), core.WithBurst(fleetBurst), core.WithStore(store),
		core.WithDimension("tokens", core.PerSecond(fleetTokens), core.WithDimensionBurst(fleetTokBurs)))
	startNs, _ := strconv.ParseInt(env("HG_START"), 10, 64)
	start := time.Unix(0, startNs)
	time.Sleep(time.Until(start))
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(fleetRun))
	defer cancel()
	var mu sync.Mutex
	var rep workerReport
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := g; ctx.Err() == nil; k++ {
				n := int64(100 + k*53%201) // this call's tokens
				p, err := budget.AcquireCost(ctx, core.Cost{Dimension: "tokens", Amount: n})
				if err != nil {
					continue // the next turn is past the end of the run
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env("HG_URL")+"/v1/chat", nil)
				req.Header.Set(quotatest.TokensHeader, strconv.FormatInt(n, 10))
				resp, err := http.DefaultClient.Do(req)
				mu.Lock()
				rep.Calls++
				rep.Tokens += n
				if err != nil && ctx.Err() == nil {
					rep.Errors++
				}
				mu.Unlock()
				if err == nil {
					p.Observe(resp.StatusCode, resp.Header)
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				p.Commit(core.Cost{Dimension: "tokens", Amount: n}) // the usage the response reported
				p.Release()
			}
		})
	}
	wg.Wait()
	json.NewEncoder(os.Stdout).Encode(rep)
}
