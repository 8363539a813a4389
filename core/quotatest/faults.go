package quotatest

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"
)

// faultState is the faults in force. Provider keeps it under its mutex; each request takes
// a snapshot when it is decided, so a fault changed mid-response does not change that response.
type faultState struct {
	latency    time.Duration
	slowChunk  int           // bytes per chunk; > 0 (with slowDelay) when bodies are dribbled
	slowDelay  time.Duration // before each chunk
	truncate   bool          // bodies are cut short and the connection closed
	resets     int           // connections still to reset
	pauseUntil time.Time     // zero: no pause
}

// SetLatency sets the time waited before every response head, admitted or refused, from
// now on; it replaces Config.Latency. A negative d counts as 0.
func (p *Provider) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.latency = max(0, d)
}

// SetSlowBody makes admitted responses dribble their body: the head is sent at once, then
// chunk bytes every delay (so a body of n bytes takes ceil(n/chunk)*delay). Over the network
// each chunk is flushed; in-process each chunk is readable as soon as it is written.
// chunk <= 0 or delay <= 0 turns it off, which is the default.
func (p *Provider) SetSlowBody(chunk int, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if chunk <= 0 || delay <= 0 {
		chunk, delay = 0, 0
	}
	p.faults.slowChunk, p.faults.slowDelay = chunk, delay
}

// SetTruncatedBody, when on, makes admitted responses declare their full Content-Length but
// send only the first half of the body (none of a 1-byte body; an empty body is declared
// as 1 byte), then end the connection. A client reading the body gets an error:
// io.ErrUnexpectedEOF, in-process and from net/http over the network.
// Responses without a body (HEAD, 204, 304) are unaffected. Default: off.
func (p *Provider) SetTruncatedBody(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.truncate = on
}

// ResetConnections makes the next n requests have their connection reset as soon as they
// arrive, before any limit is checked (they spend no quota and are not refusals). Over the
// network the connection is hijacked and closed with SO_LINGER 0, so the client gets
// "connection reset by peer"; in-process, RoundTrip returns a *net.OpError wrapping
// syscall.ECONNRESET. On both, errors.Is(err, syscall.ECONNRESET) holds (on Linux, for the
// network). Note that net/http's Transport silently retries a replayable request (GET,
// HEAD, OPTIONS, TRACE, or one with an Idempotency-Key header) whose reused keep-alive
// connection failed: each retry is one more arrival and uses one more of the n. A POST, or
// a request on a fresh connection, sees the reset. n replaces any count still pending;
// n <= 0 cancels it. Default: 0.
func (p *Provider) ResetConnections(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.resets = max(0, n)
}

// PauseFor starts a forced pause of d from now, replacing any pause in progress: every
// request until then is refused with Config.Status and the style's headers telling the time
// left (Retry-After rounded up). When the pause ends, the limiter forgets everything spent,
// so the first requests after it find a full quota. d <= 0 ends a pause at once.
func (p *Provider) PauseFor(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d <= 0 {
		p.endPauseLocked()
		return
	}
	p.faults.pauseUntil = p.cfg.Now().Add(d)
}

// PauseRemaining returns the time left in the current pause, or 0.
func (p *Provider) PauseRemaining() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.faults.pauseUntil.IsZero() {
		return 0
	}
	return max(0, p.faults.pauseUntil.Sub(p.cfg.Now()))
}

// ClearFaults ends every fault: the latency returns to Config.Latency, slow and truncated
// bodies and pending resets are off, and a pause ends (clearing the limiter, as a pause's end
// always does).
func (p *Provider) ClearFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endPauseLocked()
	p.faults = faultState{latency: p.cfg.Latency}
}

// endPauseLocked ends a pause in progress, if any, and clears the limiter.
func (p *Provider) endPauseLocked() {
	if p.faults.pauseUntil.IsZero() {
		return
	}
	p.faults.pauseUntil = time.Time{}
	p.lim.clear()
}

// sleepCtx waits d, or until ctx is done; it reports whether the wait ran its course.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connResetter is implemented by the in-process transport's writer.
type connResetter interface{ resetConnection() }

// resetConnection resets the client's connection: through the in-process writer, or by
// hijacking the network connection and closing it with SO_LINGER 0 (an RST). When the
// connection cannot be hijacked (HTTP/2), the handler aborts, which resets the stream.
func resetConnection(w http.ResponseWriter) {
	for u := w; u != nil; {
		if r, ok := u.(connResetter); ok {
			r.resetConnection()
			return
		}
		uw, ok := u.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		u = uw.Unwrap()
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// newResetError returns the in-process error of a reset connection, shaped as net/http
// reports one: a *net.OpError wrapping syscall.ECONNRESET.
func newResetError() error {
	return &net.OpError{Op: "read", Net: "tcp", Addr: fakeAddr("192.0.2.1:80"),
		Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

// faultWriter applies the slow and truncated body faults to an admitted response.
type faultWriter struct {
	w      http.ResponseWriter
	ctx    context.Context
	method string
	faults faultState

	status     int    // 0 until the header is written
	buf        []byte // the whole body, when truncating
	beforeLast func() // called before the last chunk of a slow body is written, if set
}

func (f *faultWriter) Header() http.Header { return f.w.Header() }

func (f *faultWriter) WriteHeader(code int) {
	if f.status != 0 {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		f.w.WriteHeader(code) // informational: passed through, not final
		return
	}
	f.status = code
	if f.faults.truncate {
		return // written by finish, with the declared length
	}
	f.w.WriteHeader(code)
	if f.faults.slowChunk > 0 {
		f.flush() // the head goes at once; the body dribbles
	}
}

func (f *faultWriter) Write(b []byte) (int, error) {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	switch {
	case f.faults.truncate:
		f.buf = append(f.buf, b...)
		return len(b), nil
	case f.faults.slowChunk > 0:
		return f.dribble(b)
	}
	return f.w.Write(b)
}

// Flush flushes what was written; when truncating nothing is sent before finish.
func (f *faultWriter) Flush() {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	if !f.faults.truncate {
		f.flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (f *faultWriter) Unwrap() http.ResponseWriter { return f.w }

func (f *faultWriter) flush() { _ = http.NewResponseController(f.w).Flush() }

func (f *faultWriter) statusOr200() int {
	if f.status == 0 {
		return http.StatusOK
	}
	return f.status
}

// dribble writes b a chunk at a time, waiting the delay before each chunk.
func (f *faultWriter) dribble(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if !sleepCtx(f.ctx, f.faults.slowDelay) {
			return n, f.ctx.Err()
		}
		c := min(f.faults.slowChunk, len(b))
		if c == len(b) && f.beforeLast != nil {
			f.beforeLast()
		}
		m, err := f.w.Write(b[:c])
		n += m
		if err != nil {
			return n, err
		}
		f.flush()
		b = b[c:]
	}
	return n, nil
}

// finish ends the response. A truncated body is written here, half of it, and then the
// connection is aborted; it does not return in that case.
func (f *faultWriter) finish() {
	if !f.faults.truncate {
		return
	}
	status := f.statusOr200()
	if f.method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified {
		f.w.WriteHeader(status)
		return
	}
	f.w.Header().Set("Content-Length", strconv.Itoa(max(1, len(f.buf))))
	f.w.WriteHeader(status)
	if half := f.buf[:len(f.buf)/2]; len(half) > 0 {
		f.faults.truncate = false // write through (and dribble, if slow)
		_, _ = f.Write(half)
	}
	f.flush()
	panic(http.ErrAbortHandler) // net/http closes the connection; the in-process transport ends the body
}
