package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// llmRequest is what the fakes read of a chat request: OpenAI's Chat
// Completions and Anthropic's Messages share these fields.
type llmRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Content json.RawMessage `json:"content"` // a string or an array of parts
	} `json:"messages"`
	MaxTokens           int  `json:"max_tokens"`
	MaxCompletionTokens int  `json:"max_completion_tokens"`
	Stream              bool `json:"stream"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// prompt is the request's text, every message's parts joined.
func (r *llmRequest) prompt() string {
	var b strings.Builder
	for _, m := range r.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			b.WriteString(s)
			continue
		}
		var parts []struct{ Text string }
		json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// usage is what the request uses (see Usage).
func (r *llmRequest) usage() (input, output int) {
	max := cmp(r.MaxCompletionTokens, r.MaxTokens, 1000)
	return Usage(r.prompt(), max)
}

func cmp(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// readLLM reads a chat request's body and puts it back.
func readLLM(req *http.Request) (*llmRequest, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var r llmRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("fake: request body: %w", err)
	}
	return &r, nil
}

// prepareLLM sets the tokens the request will use, for quotatest to charge.
func prepareLLM(req *http.Request) error {
	r, err := readLLM(req)
	if err != nil {
		return err
	}
	in, out := r.usage()
	req.Header.Set(quotatest.TokensHeader, strconv.Itoa(in+out))
	return nil
}

// llmConfig turns on token mode's headers.
func llmConfig(cfg quotatest.Config) quotatest.Config {
	cfg.Headers = quotatest.RetryAfterSeconds | quotatest.RetryAfterMillis | quotatest.XRateLimitDelta
	return cfg
}

// OpenAI returns a provider of OpenAI's Chat Completions API
// (POST …/chat/completions) enforcing cfg's requests and tokens per period
// (cfg.Tokens must be set), with OpenAI's headers: x-ratelimit-limit-,
// remaining- and reset-requests and -tokens on every response, retry-after
// and retry-after-ms on a 429, whose body is OpenAI's rate_limit_exceeded
// error. A streamed completion (stream: true) sends five chunks over
// streamFor and, with stream_options.include_usage, a final chunk with the
// usage. A call uses the tokens Usage gives for its prompt and max tokens.
func OpenAI(cfg quotatest.Config, streamFor time.Duration) (*API, error) {
	cfg = llmConfig(cfg)
	cfg.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r, err := readLLM(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		in, out := r.usage()
		usage := map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
		id, now := "chatcmpl-"+strconv.Itoa(in*7919+out), time.Now().Unix()
		if !r.Stream {
			b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion", "created": now, "model": r.Model,
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
					"message": map[string]any{"role": "assistant", "content": strings.Repeat("tok ", out), "refusal": nil}}},
				"usage": usage})
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
		s := newStreamer(w, streamFor/5)
		chunk := func(delta map[string]any, finish any) map[string]any {
			return map[string]any{"id": id, "object": "chat.completion.chunk", "created": now, "model": r.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}, "usage": nil}
		}
		s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		for range 4 {
			s.event("", chunk(map[string]any{"content": strings.Repeat("tok ", out/4)}, nil))
		}
		s.event("", chunk(map[string]any{}, "stop"))
		if r.StreamOptions.IncludeUsage {
			s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": now, "model": r.Model,
				"choices": []any{}, "usage": usage})
		}
		s.event("", "[DONE]")
	})
	p, err := quotatest.New(cfg)
	if err != nil {
		return nil, err
	}
	return &API{Provider: p, prepare: prepareLLM, rewrite: func(resp *http.Response, refusal string) {
		h := resp.Header
		move(h, "X-Ratelimit-Limit", "x-ratelimit-limit-requests", nil)
		move(h, "X-Ratelimit-Remaining", "x-ratelimit-remaining-requests", nil)
		move(h, "X-Ratelimit-Reset", "x-ratelimit-reset-requests", func(v string) string { return v + "s" })
		if refusal != "" {
			setBody(resp, `{"error":{"message":"Rate limit reached for requests. Please try again in `+h.Get("Retry-After")+
				`s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		}
	}}, nil
}

// Anthropic returns a provider of Anthropic's Messages API (POST
// …/v1/messages) enforcing cfg's requests and tokens per period (cfg.Tokens
// must be set), with Anthropic's headers: anthropic-ratelimit-requests- and
// -tokens- limit, remaining and reset (RFC 3339) on every response,
// retry-after on a 429, whose body is Anthropic's rate_limit_error. A
// streamed message (stream: true) sends message_start (with the input
// tokens), content deltas over streamFor, message_delta (with the output
// tokens) and message_stop. A call uses the tokens Usage gives for its
// prompt and max_tokens.
func Anthropic(cfg quotatest.Config, streamFor time.Duration) (*API, error) {
	cfg = llmConfig(cfg)
	cfg.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r, err := readLLM(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		in, out := r.usage()
		id := "msg_" + strconv.Itoa(in*7919+out)
		text := strings.Repeat("tok ", out)
		message := func(content []any, usage map[string]any, stop any) map[string]any {
			return map[string]any{"id": id, "type": "message", "role": "assistant", "model": r.Model, "content": content,
				"stop_reason": stop, "stop_sequence": nil, "usage": usage}
		}
		if !r.Stream {
			b, _ := json.Marshal(message([]any{map[string]any{"type": "text", "text": text}},
				map[string]any{"input_tokens": in, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}, "end_turn"))
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
		s := newStreamer(w, streamFor/5)
		s.event("message_start", map[string]any{"type": "message_start", "message": message([]any{},
			map[string]any{"input_tokens": in, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}, nil)})
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for range 3 {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": text[:len(text)/3]}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": out}})
		s.event("message_stop", map[string]any{"type": "message_stop"})
	})
	p, err := quotatest.New(cfg)
	if err != nil {
		return nil, err
	}
	return &API{Provider: p, prepare: prepareLLM, rewrite: func(resp *http.Response, refusal string) {
		h := resp.Header
		now := time.Now()             // the provider's clock: the fakes answer in-process, at once
		at := func(v string) string { // "3s" or "1.5s" from now, as RFC 3339, rounded up to the second
			d, err := time.ParseDuration(v)
			if err != nil {
				return v
			}
			return now.Add(d + time.Second - 1).Truncate(time.Second).UTC().Format(time.RFC3339)
		}
		move(h, "X-Ratelimit-Limit", "anthropic-ratelimit-requests-limit", nil)
		move(h, "X-Ratelimit-Remaining", "anthropic-ratelimit-requests-remaining", nil)
		move(h, "X-Ratelimit-Reset", "anthropic-ratelimit-requests-reset", func(v string) string { return at(v + "s") })
		move(h, "X-Ratelimit-Limit-Tokens", "anthropic-ratelimit-tokens-limit", nil)
		move(h, "X-Ratelimit-Remaining-Tokens", "anthropic-ratelimit-tokens-remaining", nil)
		move(h, "X-Ratelimit-Reset-Tokens", "anthropic-ratelimit-tokens-reset", at)
		h.Del("Retry-After-Ms")
		if refusal != "" {
			setBody(resp, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
		}
	}}, nil
}
