package sdks_test

import (
	"context"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/headgate-go/headgate/core"
)

// The README's Anthropic snippet (see readme_test.go): a file of its own,
// as anthropic-sdk-go's option package shares openai-go's name.
var _ = readmeAnthropic

func readmeAnthropic(ctx context.Context, budget *core.Budget, params anthropic.MessageNewParams, inputTokens, maxTokens int64) (*anthropic.Message, error) {
	// readme:begin
	client := anthropic.NewClient(option.WithHTTPClient(&http.Client{Transport: core.NewTransport(nil, budget)}))
	ctx, c := core.WithCommit(ctx, core.Cost{Dimension: "tokens", Amount: inputTokens + maxTokens})
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		c.Commit() // nothing used
		return nil, err
	}
	c.Commit(core.Cost{Dimension: "tokens", Amount: msg.Usage.InputTokens + msg.Usage.OutputTokens})
	// readme:end
	return msg, nil
}
