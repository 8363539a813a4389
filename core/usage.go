package core

import (
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/headgate-go/headgate/core/internal/usage"
)

// WithUsage makes the Transport commit, for every 2xx response to a request
// that reserved a cost (WithCost, WithCommit, or a budget with dimensions),
// the tokens the response's body reports, in the named dimension: it reads
// the usage as the body passes through to the caller, without holding the
// body back or buffering it, so streams stream. It reads OpenAI's and
// Anthropic's JSON responses and their server-sent event streams:
//
//   - OpenAI: usage.total_tokens of a chat completion, of a streamed one's
//     final chunk (request it with stream_options.include_usage: without
//     it a stream reports no usage) and of a Responses API response;
//   - Anthropic: input_tokens + output_tokens + cache_creation_input_tokens
//   - cache_read_input_tokens of a message, and of a stream's
//     message_start and (cumulative) message_delta events.
//
// The usage is committed when the body ends (read to EOF) or is closed, so a
// stream keeps its slot and its estimate until then; a stream closed before
// any usage beyond message_start's, and a body that reports none, settle as
// without WithUsage (see Commit). Other dimensions keep their estimates. This
// is the path for SDKs, which read and close the body themselves; the
// Commitment returned by WithCommit is the other.
//
// A request whose budget has no such dimension, and a body still compressed
// (a Content-Encoding the caller asked for itself; net/http's transparent
// gzip is undone below the Transport), are passed through untouched.
// WithUsage panics on an empty dimension, as WithLane does. By default a
// Transport reads no usage.
func WithUsage(dimension string) TransportOption {
	if dimension == "" {
		panic("headgate: WithUsage needs a dimension name")
	}
	return transportOptionFunc(func(t *Transport) { t.usage = dimension })
}

// readUsage returns resp's body, wrapped to commit the usage it reports
// when WithUsage applies to it.
func (t *Transport) readUsage(resp *http.Response, cost *costHolder) io.ReadCloser {
	if t.usage == "" || cost == nil || !is2xx(resp.StatusCode) || cost.p.b.dims == nil {
		return resp.Body
	}
	dim := cost.p.b.dims.index(t.usage)
	if dim < 0 {
		return resp.Body
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return resp.Body // compressed, as the caller asked: not ours to read
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sse := mt == "text/event-stream"
	if !sse && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return resp.Body
	}
	return &usageBody{rc: resp.Body, cost: cost, dim: dim, scan: usage.Scan{SSE: sse}}
}

// usageBody reads the usage from a body as it is read, and commits it when
// the body ends or is closed.
type usageBody struct {
	rc   io.ReadCloser
	cost *costHolder
	dim  int // index of the usage's dimension

	mu   sync.Mutex // Close may come while a Read runs
	scan usage.Scan // guarded by mu
}

func (b *usageBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	b.scan.Write(p[:n])
	b.mu.Unlock()
	if err == io.EOF {
		b.commit(true)
	}
	return n, err
}

// Close commits the usage read so far, unless it is only a stream's
// opening report, and closes the body.
func (b *usageBody) Close() error {
	b.commit(false)
	return b.rc.Close()
}

// commit settles the attempt's cost at the usage read, the other
// dimensions at their estimates; without a usage it does nothing.
func (b *usageBody) commit(ended bool) {
	b.mu.Lock()
	ok, total := b.scan.Seen() && (ended || b.scan.Final()), b.scan.Total()
	b.mu.Unlock()
	if !ok {
		return
	}
	r, d := b.cost.p.res, b.cost.p.b.dims
	actual := make([]Cost, 0, len(d.d))
	for i := range d.d {
		n := r.n[i] // set when reserved, read-only since
		if i == b.dim {
			n = total
		}
		actual = append(actual, Cost{Dimension: d.d[i].name, Amount: n})
	}
	b.cost.commit(actual)
}
