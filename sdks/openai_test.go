package sdks_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/sdks/fake"
)

// openAIClient is the SDK over rt, at the fake's base URL.
func openAIClient(rt http.RoundTripper) openai.Client {
	return openai.NewClient(option.WithBaseURL("http://api.openai.test/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: rt}))
}

// openAICall is one chat completion, streamed or not.
func openAICall(client openai.Client, stream bool) llmCall {
	return func(ctx context.Context, prompt string) (int64, error) {
		params := openai.ChatCompletionNewParams{
			Model:               openai.ChatModelGPT5_5,
			Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			MaxCompletionTokens: openai.Int(maxTokens),
		}
		if !stream {
			out, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return 0, err
			}
			return out.Usage.TotalTokens, nil
		}
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		return acc.Usage.TotalTokens, s.Err()
	}
}

// TestOpenAI runs many concurrent chat completions, streamed and not,
// through openai-go and a headgate budget of the provider's requests and
// tokens per minute, committing usage both ways (core.WithUsage in the
// Transport, Commitment.Commit from the decoded Usage): no 429, the
// provider's token count committed, within 1.05× of the ideal.
func TestOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name           string
		stream, commit bool
	}{
		{"chat/WithUsage", false, false},
		{"chat/WithCommit", false, true},
		{"stream/WithUsage", true, false},
		{"stream/WithCommit", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api, err := fake.OpenAI(llmLimits, streamFor)
				if err != nil {
					t.Fatal(err)
				}
				var opts []core.TransportOption
				if !tc.commit {
					opts = append(opts, core.WithUsage("tokens"))
				}
				client := openAIClient(core.NewTransport(api.Transport(), llmBudget(), opts...))
				res := runLLM(t, openAICall(client, tc.stream), tc.commit)
				latency := time.Duration(0)
				if tc.stream {
					latency = streamFor
				}
				checkLLM(t, api, res, tc.commit, latency)
			})
		})
	}
}

// TestOpenAISharedPause: the provider pauses (429 with retry-after) while
// many calls run; the SDK's retry and the budget's pause end together.
func TestOpenAISharedPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, err := fake.OpenAI(llmLimits, 0)
		if err != nil {
			t.Fatal(err)
		}
		client := openAIClient(core.NewTransport(api.Transport(), llmBudget(), core.WithUsage("tokens")))
		pausedAt := pauseDuring(api, 30*time.Second, 10*time.Second)
		res := runLLM(t, openAICall(client, false), false)
		if res.errs != 0 {
			t.Errorf("%d calls failed, want none (the SDK retries the refused one)", res.errs)
		}
		checkPause(t, api, pausedAt(), 10*time.Second, time.Second, true)
	})
}

// TestOpenAIWithoutHeadgate is the control: the same calls through the SDK
// alone (with its own retries) meet refusals.
func TestOpenAIWithoutHeadgate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, err := fake.OpenAI(llmLimits, 0)
		if err != nil {
			t.Fatal(err)
		}
		res := runLLM(t, openAICall(openAIClient(api.Transport()), false), true)
		t.Logf("without headgate: %d of %d requests refused, %d calls failed, took %v", api.Refused(), api.Count(), res.errs, res.took)
		if api.Refused() == 0 {
			t.Error("no request refused without headgate: the test cannot tell headgate's effect")
		}
	})
}
