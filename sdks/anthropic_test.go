package sdks_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/sdks/fake"
)

// anthropicClient is the SDK over rt, at the fake's base URL.
func anthropicClient(rt http.RoundTripper) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL("http://api.anthropic.test/"), option.WithAPIKey("sk-ant-test"),
		option.WithHTTPClient(&http.Client{Transport: rt}))
}

// anthropicTokens is what Anthropic counts of a usage.
func anthropicTokens(u anthropic.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// anthropicCall is one message, streamed or not.
func anthropicCall(client anthropic.Client, stream bool) llmCall {
	return func(ctx context.Context, prompt string) (int64, error) {
		params := anthropic.MessageNewParams{
			Model:     anthropic.ModelClaudeHaiku5_5,
			MaxTokens: maxTokens,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		}
		if !stream {
			msg, err := client.Messages.New(ctx, params)
			if err != nil {
				return 0, err
			}
			return anthropicTokens(msg.Usage), nil
		}
		s := client.Messages.NewStreaming(ctx, params)
		var msg anthropic.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return 0, err
			}
		}
		return anthropicTokens(msg.Usage), s.Err()
	}
}

// TestAnthropic is TestOpenAI for anthropic-sdk-go: messages, streamed and
// not, with the usage committed both ways.
func TestAnthropic(t *testing.T) {
	for _, tc := range []struct {
		name           string
		stream, commit bool
	}{
		{"message/WithUsage", false, false},
		{"message/WithCommit", false, true},
		{"stream/WithUsage", true, false},
		{"stream/WithCommit", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api, err := fake.Anthropic(llmLimits, streamFor)
				if err != nil {
					t.Fatal(err)
				}
				var opts []core.TransportOption
				if !tc.commit {
					opts = append(opts, core.WithUsage("tokens"))
				}
				client := anthropicClient(core.NewTransport(api.Transport(), llmBudget(), opts...))
				res := runLLM(t, anthropicCall(client, tc.stream), tc.commit)
				latency := time.Duration(0)
				if tc.stream {
					latency = streamFor
				}
				checkLLM(t, api, res, tc.commit, latency)
			})
		})
	}
}

// TestAnthropicSharedPause: the provider pauses (429 with retry-after) while
// many calls run; the SDK's retry and the budget's pause end together.
func TestAnthropicSharedPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, err := fake.Anthropic(llmLimits, 0)
		if err != nil {
			t.Fatal(err)
		}
		client := anthropicClient(core.NewTransport(api.Transport(), llmBudget(), core.WithUsage("tokens")))
		pausedAt := pauseDuring(api, 30*time.Second, 10*time.Second)
		res := runLLM(t, anthropicCall(client, false), false)
		if res.errs != 0 {
			t.Errorf("%d calls failed, want none (the SDK retries the refused one)", res.errs)
		}
		checkPause(t, api, pausedAt(), 10*time.Second, time.Second, true)
	})
}

// TestAnthropicWithoutHeadgate is the control: the same calls through the SDK
// alone (with its own retries) meet refusals.
func TestAnthropicWithoutHeadgate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, err := fake.Anthropic(llmLimits, 0)
		if err != nil {
			t.Fatal(err)
		}
		res := runLLM(t, anthropicCall(anthropicClient(api.Transport()), false), true)
		t.Logf("without headgate: %d of %d requests refused, %d calls failed, took %v", api.Refused(), api.Count(), res.errs, res.took)
		if api.Refused() == 0 {
			t.Error("no request refused without headgate: the test cannot tell headgate's effect")
		}
	})
}
