// Command openai runs concurrent chat completions, streamed, through
// openai-go and a headgate budget of requests and tokens, against a fake
// OpenAI that enforces both limits (offline, in-process). The transport
// commits each call's usage from its stream's final chunk.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

const maxTokens = 200

func main() {
	// 1,000 tokens a second, 500 at once: the 100 calls use some 11,000, so the limit binds.
	limits := quotatest.Config{Requests: 3000, Period: time.Minute, Tokens: 60_000, TokenBurst: 500}
	const streamFor = 50 * time.Millisecond
	api, err := fake.OpenAI(limits, streamFor)
	if err != nil {
		log.Fatal(err)
	}

	// The wiring: a budget of the account's limits, a Transport that reads
	// the usage as the stream passes, and the SDK on an http.Client over it.
	budget := core.MustBudget(core.PerMinute(3000),
		core.WithDimension("tokens", core.PerMinute(60_000), core.WithDimensionBurst(500)))
	hc := &http.Client{Transport: core.NewTransport(api.Transport(), budget, core.WithUsage("tokens"))}
	client := openai.NewClient(option.WithHTTPClient(hc),
		option.WithBaseURL("http://api.openai.test/v1/"), option.WithAPIKey("sk-test")) // a real program keeps the defaults

	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var used int64
	for i := range 100 {
		wg.Go(func() {
			prompt := fmt.Sprintf("call %d: write about rate limits", i)
			in, _ := fake.Usage(prompt, 1)
			// Reserve the most the call can use; the transport commits what it used.
			ctx := core.WithCost(context.Background(), core.Cost{Dimension: "tokens", Amount: int64(in + maxTokens)})
			s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:               openai.ChatModelGPT5_5,
				Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				MaxCompletionTokens: openai.Int(maxTokens),
				StreamOptions:       openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				log.Fatal(err)
			}
			mu.Lock()
			used += acc.Usage.TotalTokens
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	counted := 0
	for _, a := range api.Arrivals() {
		counted += a.Tokens
	}
	// The least time the tokens limit allows: all but the burst at 1,000 a second, then the answer.
	ideal := time.Duration(counted-limits.TokenBurst)*time.Millisecond + streamFor
	fmt.Printf("took %.2fs, %.3f× the ideal %.2fs (real time: a loaded machine adds to it)\n", took.Seconds(), float64(took)/float64(ideal), ideal.Seconds())
	fmt.Printf("calls: %d, refused: %d, tokens used: %d, counted by the provider: %d\n", api.Admitted(), api.Refused(), used, counted)
}
