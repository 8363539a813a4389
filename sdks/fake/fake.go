// Package fake serves quotatest providers that speak the APIs of OpenAI,
// Anthropic, GitHub and Stripe: their response shapes and rate-limit headers,
// as their documentation gives them, over an in-process transport (no
// network; it works inside testing/synctest). A provider enforces a real
// limit (quotatest's); this package only translates what it answers into
// each API's dialect, so the real SDKs decode it.
package fake

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// An API is a quotatest provider and the transport that speaks its dialect.
type API struct {
	*quotatest.Provider
	// rewrite turns a quotatest answer into the API's: headers, and for
	// refusals the error body. req is the request as the SDK sent it.
	rewrite func(resp *http.Response, refusal string)
	// prepare reads a request before the provider decides it (LLMs: sets
	// the tokens it will use as quotatest.TokensHeader).
	prepare func(req *http.Request) error
}

// Transport returns the in-process transport to the provider, in the API's
// dialect. Give it to headgate's core.NewTransport as next, or to an SDK
// alone to see it without headgate.
func (a *API) Transport() http.RoundTripper { return apiTransport{a} }

type apiTransport struct{ a *API }

func (t apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.a.prepare != nil {
		req = req.Clone(req.Context())
		if err := t.a.prepare(req); err != nil {
			return nil, err
		}
	}
	resp, err := t.a.Provider.Transport().RoundTrip(req)
	if err != nil || resp.StatusCode < 400 {
		if err == nil {
			t.a.rewrite(resp, "")
		}
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var refusal struct{ Error string }
	json.Unmarshal(body, &refusal)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	t.a.rewrite(resp, refusal.Error)
	return resp, nil
}

// setBody replaces a response's body with a JSON document.
func setBody(resp *http.Response, body string) {
	resp.Body = io.NopCloser(strings.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Set("Content-Type", "application/json")
}

// move renames a header, optionally rewriting its value.
func move(h http.Header, from, to string, f func(string) string) {
	v := h.Get(from)
	h.Del(from)
	if v == "" {
		return
	}
	if f != nil {
		v = f(v)
	}
	h.Set(to, v)
}

// Usage is what a fake LLM call uses: its prompt's tokens and the tokens it
// completes, which depend only on the prompt (so a test knows them) and
// never exceed maxTokens.
func Usage(prompt string, maxTokens int) (input, output int) {
	h := fnv.New32a()
	h.Write([]byte(prompt))
	return (len(prompt) + 3) / 4, 1 + int(h.Sum32()%uint32(maxTokens))
}

// streamer writes server-sent events with a gap between them.
type streamer struct {
	w   http.ResponseWriter
	gap time.Duration
	n   int
}

func newStreamer(w http.ResponseWriter, gap time.Duration) *streamer {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	return &streamer{w: w, gap: gap}
}

func (s *streamer) event(name string, data any) {
	if s.n > 0 {
		time.Sleep(s.gap)
	}
	s.n++
	var b []byte
	if name != "" {
		b = append(b, "event: "+name+"\n"...)
	}
	d, ok := data.(string)
	if !ok {
		j, _ := json.Marshal(data)
		d = string(j)
	}
	b = append(b, "data: "+d+"\n\n"...)
	s.w.Write(b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
