package usage

import (
	"strings"
	"testing"
)

// Bodies as the providers document them (trimmed to what matters).
const (
	openAIChat = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"usage: {\"total_tokens\": 1}"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`
	openAIStream = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12,\"total_tokens\":21}}\n\n" +
		"data: [DONE]\n\n"
	anthropicMessage = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"f","input":{"usage":{"output_tokens":999}}}],` +
		`"stop_reason":"end_turn","usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":11,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"}}`
	anthropicStream = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"content\":[],\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":null,\"cache_read_input_tokens\":null,\"output_tokens\":1}}}\r\n\r\n" +
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\r\n\r\n" +
		"event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n" +
		"event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\r\n\r\n" +
		"event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n"
	responsesStream = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":{\"input_tokens\":7,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":3,\"total_tokens\":10}}}\n\n"
)

// TestUsageScan reads documented bodies whole and byte by byte: the tokens
// read, whether a usage was seen, and whether it is final (not only a
// stream's opening report).
func TestUsageScan(t *testing.T) {
	tests := []struct {
		name, body string
		sse        bool
		want       int64
		seen       bool
		final      bool
	}{
		{"openai chat completion", openAIChat, false, 29, true, true},
		{"openai stream include_usage", openAIStream, true, 21, true, true},
		{"openai stream without usage", openAIStream[:strings.Index(openAIStream, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],")], true, 0, false, false},
		{"anthropic message", anthropicMessage, false, 25 + 5 + 11, true, true},
		{"anthropic stream", anthropicStream, true, 25 + 15, true, true},
		{"anthropic stream cut after message_start", anthropicStream[:strings.Index(anthropicStream, "event: content_block_delta")], true, 25 + 1, true, false},
		{"responses stream", responsesStream, true, 10, true, true},
		{"usage as a string", `{"usage":"29"}`, false, 0, false, false},
		{"usage deeper than two levels", `{"a":{"b":{"usage":{"total_tokens":5}}}}`, false, 0, false, false},
		{"fraction and negative ignored", `{"usage":{"prompt_tokens":1.5,"completion_tokens":-2,"total_tokens":1e3}}`, false, 0, false, false},
		{"huge count saturates", `{"usage":{"total_tokens":99999999999999999999999999}}`, false, maxUsage, true, true},
		{"escaped key is not a key we read", `{"usage":{"total\u005ftokens":5,"prompt_tokens":2}}`, false, 2, true, true},
		{"not json", "garbage \x00\xff\"\\", false, 0, false, false},
		{"sse data without space, LF only", "data:{\"usage\":{\"total_tokens\":4}}\n\n", true, 4, true, true},
		{"sse event cut mid-document", "data: {\"a\":[{\"usage\":\n\ndata: {\"usage\":{\"total_tokens\":3}}\n\n", true, 3, true, true},
		{"sse data over two CRLF lines", "data: {\"usage\":\r\ndata: {\"total_tokens\":5}}\r\n\r\n", true, 5, true, true},
		{"sse other field ignored", "id: {\"usage\":{\"total_tokens\":4}}\n\n", true, 0, false, false},
	}
	for _, tt := range tests {
		for _, split := range []bool{false, true} {
			s := Scan{SSE: tt.sse}
			if split {
				for i := range len(tt.body) {
					s.Write([]byte(tt.body[i : i+1]))
				}
			} else {
				s.Write([]byte(tt.body))
			}
			got := int64(0)
			if s.Seen() {
				got = s.Total()
			}
			if got != tt.want || s.Seen() != tt.seen || (s.Seen() && s.final != tt.final) {
				t.Errorf("%s (byte by byte %v): total %d, seen %v, final %v; want %d, %v, %v",
					tt.name, split, got, s.Seen(), s.final, tt.want, tt.seen, tt.final)
			}
		}
	}
}

// FuzzUsageScan: any body, fed whole or in two pieces anywhere, reads the
// same usage and never panics or goes negative.
func FuzzUsageScan(f *testing.F) {
	for _, b := range []string{openAIChat, openAIStream, anthropicMessage, anthropicStream, responsesStream} {
		f.Add([]byte(b), true, uint16(len(b)/2))
		f.Add([]byte(b), false, uint16(7))
	}
	f.Fuzz(func(t *testing.T, body []byte, sse bool, cut uint16) {
		whole, parts := Scan{SSE: sse}, Scan{SSE: sse}
		whole.Write(body)
		c := min(int(cut), len(body))
		parts.Write(body[:c])
		parts.Write(body[c:])
		if whole.Seen() != parts.Seen() || whole.Total() != parts.Total() || whole.final != parts.final {
			t.Fatalf("whole: %v %d %v, in two at %d: %v %d %v", whole.Seen(), whole.Total(), whole.final, c, parts.Seen(), parts.Total(), parts.final)
		}
		if tot := whole.Total(); tot < 0 || tot > maxUsage {
			t.Fatalf("total %d out of [0, %d]", tot, maxUsage)
		}
	})
}
