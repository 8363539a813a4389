package core

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Bodies as the providers document them (trimmed to what matters), in
// internal/usage/testdata (the scanner's own tests read them too).
var (
	openAIChat       = fixture("openai_chat.json")
	openAIStream     = fixture("openai_stream.txt")
	anthropicMessage = fixture("anthropic_message.json")
	anthropicStream  = fixture("anthropic_stream.txt")
)

// fixture is the body in core/internal/usage/testdata/name, whole.
func fixture(name string) string {
	b, err := os.ReadFile(filepath.Join("internal", "usage", "testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// streamNext answers every request with a server-sent event stream that
// sends events one every gap, as a provider streams a completion.
func streamNext(events []string, gap time.Duration) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		pr, pw := io.Pipe()
		go func() {
			for i, e := range events {
				if i > 0 {
					time.Sleep(gap)
				}
				if _, err := pw.Write([]byte(e)); err != nil {
					return // the caller closed the body
				}
			}
			pw.Close()
		}()
		return &http.Response{StatusCode: http.StatusOK, Body: pr, Request: r,
			Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}}, nil
	})
}

// sseEvents splits a stream into its events.
func sseEvents(stream string) []string {
	var out []string
	for e := range strings.SplitAfterSeq(stream, "\n\n") {
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

// readUntilDone reads a stream's lines as an SDK does and closes it at
// [DONE], before EOF; mid runs after the first line is read.
func readUntilDone(body io.ReadCloser, mid func()) {
	sc := bufio.NewScanner(body)
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			mid()
		}
		if sc.Text() == "data: [DONE]" {
			break
		}
	}
	body.Close()
}

// TestUsageStreamHoldsSlotAndCommits streams an OpenAI completion (four
// events, 250 ms apart, read as they come: the stream ends at 0.75 s) through a budget of one request in flight and 100 tokens a second. The
// stream's events reach the caller as they are sent; the stream holds the
// slot until it ends, and commits the 21 tokens its final chunk reports, so
// the next request (100 tokens) goes the instant it ends — not at 1 s, when
// the first request's estimate of 100 would have returned.
func TestUsageStreamHoldsSlotAndCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithMaxInFlight(1), WithDimension("tokens", PerSecond(100)))
		events := sseEvents(openAIStream)
		c := &http.Client{Transport: NewTransport(streamNext(events, 250*time.Millisecond), b, WithUsage("tokens"))}
		start := time.Now()
		get := func() *http.Response {
			req, _ := http.NewRequestWithContext(WithCost(context.Background(), tokens(100)), http.MethodPost, "http://llm.test/v1/chat/completions", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		resp := get()
		second := make(chan time.Duration)
		go func() {
			r := get()
			second <- time.Since(start)
			r.Body.Close()
		}()
		readUntilDone(resp.Body, func() {
			if d := time.Since(start); d != 0 {
				t.Errorf("first event read at %v, want 0 (not held back)", d)
			}
			time.Sleep(250 * time.Millisecond)
			if n := b.InFlight(); n != 1 {
				t.Errorf("mid-stream: InFlight = %d, want 1", n)
			}
		})
		if got := <-second; got != 750*time.Millisecond {
			t.Errorf("second request sent at %v, want 750ms (the stream's end, with 21 tokens committed)", got)
		}
		time.Sleep(time.Second) // the second stream's writer finds its body closed
	})
}

// TestUsageJSONAndFallbacks: a JSON body read to EOF and closed by an SDK
// commits its usage; a stream cut after Anthropic's message_start, a body
// that reports no usage and a compressed body keep their estimates; a Commitment finds
// nothing left to settle once WithUsage committed.
func TestUsageJSONAndFallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)))
		body, ctype, encoding := anthropicMessage, "application/json", ""
		next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			h := http.Header{"Content-Type": {ctype}}
			if encoding != "" {
				h.Set("Content-Encoding", encoding) // the body stands for gzip the caller asked for
			}
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(body)), Request: r, Header: h}, nil
		})
		c := &http.Client{Transport: NewTransport(next, b, WithUsage("tokens"))}
		start := time.Now()
		send := func(step int, want time.Duration, read func(io.Reader)) {
			t.Helper()
			ctx, cm := WithCommit(context.Background(), tokens(100))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/v1/messages", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != want {
				t.Fatalf("step %d: sent at %v, want %v", step, got, want)
			}
			read(resp.Body)
			resp.Body.Close()
			if step == 1 && cm.Commit(tokens(0)) {
				t.Fatal("step 1: Commitment.Commit after WithUsage committed = true, want false")
			}
			cm.Commit(tokens(100)) // a Commitment that found nothing settled keeps the estimate
		}
		readAll := func(r io.Reader) { io.ReadAll(r) }
		send(1, 0, readAll) // 41 tokens used: 59 come back
		body, ctype = anthropicStream[:strings.Index(anthropicStream, "event: content_block_delta")], "text/event-stream"
		send(2, 410*time.Millisecond, func(r io.Reader) { r.Read(make([]byte, len(body))) }) // closed before EOF: 100 kept
		body, ctype = `{"ok":true}`, "application/json"
		send(3, 1410*time.Millisecond, readAll) // no usage: 100 kept
		body, encoding = openAIChat, "gzip"
		send(4, 2410*time.Millisecond, readAll) // compressed: not read, 100 kept
		send(5, 3410*time.Millisecond, readAll)
	})
}

// TestUsageWithoutEstimate: on a budget with dimensions, a request sent
// with no estimate still has its usage committed (as an overspend, which
// the next request waits out).
func TestUsageWithoutEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)))
		next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(anthropicMessage)), Request: r,
				Header: http.Header{"Content-Type": {"application/json"}}}, nil
		})
		c := &http.Client{Transport: NewTransport(next, b, WithUsage("tokens"))}
		start := time.Now()
		resp, err := c.Post("http://llm.test/v1/messages", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		req, _ := http.NewRequestWithContext(WithCost(context.Background(), tokens(100)), http.MethodPost, "http://llm.test/v1/messages", nil)
		if resp, err = c.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := time.Since(start); got != 410*time.Millisecond { // the 41 tokens used take 0.41 s to return
			t.Errorf("second request sent at %v, want 410ms", got)
		}
	})
}
