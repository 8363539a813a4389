// Command llm sends a batch of 200 chat-completion-shaped requests to a fake
// LLM provider (quotatest in token mode) that enforces requests per second
// and tokens per second at once, through a headgate budget with a "tokens"
// dimension. Each request reserves its max_tokens as an upper bound and
// commits the usage the reply reports, so the tokens it did not use return
// to the budget. It prints the 429s (zero expected) and the makespan beside
// the ideal set by the binding limit.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

const (
	requests   = 200
	workers    = 32
	maxTokens  = 800 // each request's estimate: its max_tokens
	rps        = 50  // provider: requests per second, burst 10
	tps        = 20_000
	tokenBurst = 5_000
	latency    = 50 * time.Millisecond
)

func main() {
	provider, err := quotatest.New(quotatest.Config{
		Requests: rps, Period: time.Second, Burst: 10,
		Tokens: tps, TokenBurst: tokenBurst,
		Latency: latency,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The client keeps a little under the provider's bursts: requests reach
	// the provider a few microseconds after their turn, not at it.
	budget := core.MustBudget(core.PerSecond(rps), core.WithBurst(8),
		core.WithDimension("tokens", core.PerSecond(tps), core.WithDimensionBurst(tokenBurst-1000)))
	client := &http.Client{Transport: core.NewTransport(provider.Transport(), budget)}

	rng := rand.New(rand.NewPCG(8, 8))
	usage := make([]int, requests) // what each completion will use (the model decides)
	total := 0
	for i := range usage {
		usage[i] = 200 + rng.IntN(maxTokens-200+1)
		total += usage[i]
	}

	var refused, failed atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				switch status, err := complete(client, usage[i]); {
				case err != nil:
					failed.Add(1)
				case status == http.StatusTooManyRequests:
					refused.Add(1)
				}
			}
		})
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	makespan := time.Since(start)

	// The ideal: the binding limit's time to pass the batch beyond its burst,
	// plus one reply's latency.
	byTokens := time.Duration(float64(total-tokenBurst) / tps * float64(time.Second))
	byRequests := time.Duration(float64(requests-10) / rps * float64(time.Second))
	binding, ideal := "tokens", byTokens
	if byRequests > byTokens {
		binding, ideal = "requests", byRequests
	}
	ideal += latency
	ratio := float64(makespan) / float64(ideal)
	fmt.Printf("requests: %d, tokens used: %d, 429s: %d, errors: %d\n", requests, total, refused.Load(), failed.Load())
	fmt.Printf("makespan: %v, ideal (%s bind): %v, ratio %.3f\n",
		makespan.Round(time.Millisecond), binding, ideal.Round(time.Millisecond), ratio)
	if refused.Load() > 0 || failed.Load() > 0 || ratio > 1.10 {
		os.Exit(1)
	}
}

// complete sends one chat completion that will use n tokens, reserving
// maxTokens, and commits the usage the reply reports.
func complete(c *http.Client, n int) (int, error) {
	ctx := core.WithCost(context.Background(), core.Cost{Dimension: "tokens", Amount: maxTokens})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/v1/chat/completions", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(quotatest.TokensHeader, strconv.Itoa(n)) // stands for the prompt the fake provider "runs"
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return resp.StatusCode, err
		}
		core.Commit(resp, core.Cost{Dimension: "tokens", Amount: body.Usage.TotalTokens})
	}
	return resp.StatusCode, nil
}
