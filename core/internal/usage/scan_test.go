package usage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bodies as the providers document them (trimmed to what matters), in
// testdata (core's usage tests read them too).
var (
	openAIChat       = fixture("openai_chat.json")
	openAIStream     = fixture("openai_stream.txt")
	anthropicMessage = fixture("anthropic_message.json")
	anthropicStream  = fixture("anthropic_stream.txt")
	responsesStream  = fixture("responses_stream.txt")
)

// fixture is the body in core/internal/usage/testdata/name, whole.
func fixture(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

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
