// Command anthropic runs concurrent messages through anthropic-sdk-go and a
// headgate budget of requests and tokens, against a fake Anthropic that
// enforces both limits (offline, in-process). Each call commits its usage
// from the Message the SDK decoded, through a core.Commitment.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

const maxTokens = 200

func main() {
	// 1,000 tokens a second, 500 at once: the 100 calls use some 11,000, so the limit binds.
	limits := quotatest.Config{Requests: 3000, Period: time.Minute, Tokens: 60_000, TokenBurst: 500}
	const streamFor = 0 // not streamed
	api, err := fake.Anthropic(limits, streamFor)
	if err != nil {
		log.Fatal(err)
	}

	budget := core.MustBudget(core.PerMinute(3000),
		core.WithDimension("tokens", core.PerMinute(60_000), core.WithDimensionBurst(500)))
	hc := &http.Client{Transport: core.NewTransport(api.Transport(), budget)}
	client := anthropic.NewClient(option.WithHTTPClient(hc),
		option.WithBaseURL("http://api.anthropic.test/"), option.WithAPIKey("sk-ant-test"))

	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var committed int64
	for i := range 100 {
		wg.Go(func() {
			prompt := fmt.Sprintf("call %d: write about rate limits", i)
			in, _ := fake.Usage(prompt, 1)
			ctx, c := core.WithCommit(context.Background(), core.Cost{Dimension: "tokens", Amount: int64(in + maxTokens)})
			msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
				Model:     anthropic.ModelClaudeHaiku5_5,
				MaxTokens: maxTokens,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
			})
			if err != nil {
				c.Commit() // nothing was used
				log.Fatal(err)
			}
			u := msg.Usage
			n := u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			c.Commit(core.Cost{Dimension: "tokens", Amount: n})
			mu.Lock()
			committed += n
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
	fmt.Printf("calls: %d, refused: %d, tokens committed: %d, counted by the provider: %d\n", api.Admitted(), api.Refused(), committed, counted)
}
