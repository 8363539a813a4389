package quotatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"sync"
)

// Transport returns an http.RoundTripper that serves each request with p in-process: no
// listener, no network, so it works inside a testing/synctest bubble, where time is virtual.
// The URL's host is ignored; any URL reaches p.
//
// It behaves like net/http's Transport where that matters to a client under test: the
// response is returned as soon as its head is written (a slow body streams), the request's
// context bounds the wait for the head and every body read, req.Body is always closed, a
// body shorter than its Content-Length ends with io.ErrUnexpectedEOF, HEAD, 204, 304 and
// empty responses have http.NoBody, and a reset connection is an error, never a response.
// Closing the response body early cancels the handler's context. The handler runs in its
// own goroutine, and its writes are buffered up to 64 KiB ahead of the reader, as a
// socket would; beyond that it waits for the reader.
func (p *Provider) Transport() http.RoundTripper { return &transport{p: p} }

// Client returns an *http.Client whose Transport is p.Transport().
func (p *Provider) Client() *http.Client { return &http.Client{Transport: p.Transport()} }

type transport struct{ p *Provider }

// pipeLimit is how far the handler may write ahead of the reader.
const pipeLimit = 64 << 10

var (
	errClientGone  = errors.New("headgate: quotatest: the client closed the response body")
	errHandlerDied = fmt.Errorf("headgate: quotatest: the handler aborted before the response head: %w", io.EOF)
)

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL == nil {
		closeRequestBody(req)
		return nil, errors.New("headgate: quotatest: nil Request.URL")
	}
	if err := ctx.Err(); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	hctx, cancel := context.WithCancel(ctx)
	rw := &pipeWriter{
		header:     make(http.Header),
		method:     req.Method,
		clientCtx:  ctx,
		handlerCtx: hctx,
		cancel:     cancel,
		headReady:  make(chan struct{}),
		dataReady:  make(chan struct{}, 1),
		spaceReady: make(chan struct{}, 1),
		clen:       -1,
	}
	sreq := serverRequest(req, hctx)
	go func() {
		defer closeRequestBody(req)
		rw.finish(serve(t.p, rw, sreq))
		cancel()
	}()
	select {
	case <-rw.headReady:
	case <-ctx.Done():
		rw.clientGone(true)
		return nil, ctx.Err()
	}
	return rw.response(req)
}

// serve runs the handler and returns its panic, if any, as net/http's server would see it.
func serve(p *Provider, w http.ResponseWriter, r *http.Request) (panicked any) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				log.Printf("headgate: quotatest: panic serving %s: %v\n%s", r.URL.Path, v, debug.Stack())
			}
			panicked = v
		}
	}()
	p.ServeHTTP(w, r)
	return nil
}

// serverRequest is req as a server's handler would receive it.
func serverRequest(req *http.Request, ctx context.Context) *http.Request {
	s := req.Clone(ctx)
	s.RequestURI = req.URL.RequestURI()
	if u, err := url.ParseRequestURI(s.RequestURI); err == nil {
		s.URL = u
	}
	if s.Host == "" {
		s.Host = req.URL.Host
	}
	s.Proto, s.ProtoMajor, s.ProtoMinor = "HTTP/1.1", 1, 1
	s.RemoteAddr = "192.0.2.2:41234"
	s.Body = http.NoBody
	if req.Body != nil && req.Body != http.NoBody {
		s.Body = io.NopCloser(req.Body) // closed once, by RoundTrip, when the handler is done
	}
	s.GetBody, s.Close, s.TLS, s.Response = nil, false, nil, nil
	return s
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// pipeWriter is the handler's side of an in-process response; pipeBody is the client's.
type pipeWriter struct {
	method     string
	clientCtx  context.Context    // bounds the client's reads
	handlerCtx context.Context    // the handler's: the client's, cancelled when the client goes
	cancel     context.CancelFunc // cancels the handler's context
	headReady  chan struct{}      // closed when the head is ready, or the exchange failed before it
	dataReady  chan struct{}      // signalled when buf grows or the body ends
	spaceReady chan struct{}      // signalled when buf shrinks or the client closes

	header http.Header // the handler's; owned by the handler goroutine

	mu         sync.Mutex
	status     int          // guarded by mu; 0 until WriteHeader
	sent       http.Header  // guarded by mu; the header snapshot taken with the head
	headSent   bool         // guarded by mu
	headErr    error        // guarded by mu; the exchange failed before the head
	noBody     bool         // guarded by mu; HEAD, 204, 304: writes are discarded
	clen       int64        // guarded by mu; declared Content-Length, -1 if none
	written    int64        // guarded by mu
	buf        bytes.Buffer // guarded by mu; written, not yet read
	ended      bool         // guarded by mu; the body is complete (or failed: bodyErr)
	bodyErr    error        // guarded by mu; what the reader gets after buf, instead of io.EOF
	closed     bool         // guarded by mu; the client closed the body or gave up
	clientDone func()       // guarded by mu; called once, when the client closes the body or gives up
}

var (
	_ http.ResponseWriter = (*pipeWriter)(nil)
	_ http.Flusher        = (*pipeWriter)(nil)
	_ connResetter        = (*pipeWriter)(nil)
	_ clientDoneNotifier  = (*pipeWriter)(nil)
)

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status != 0 || w.headSent || (code >= 100 && code < 200 && code != http.StatusSwitchingProtocols) {
		return // superfluous, or informational (not visible to a net/http client either)
	}
	w.status = code
	w.clen = -1
	if v := w.header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.clen = n
		}
	}
	w.noBody = w.method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	if w.status == 0 {
		if w.header.Get("Content-Type") == "" && len(b) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(b))
		}
		w.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		w.mu.Lock()
	}
	w.sendHeadLocked()
	if w.noBody {
		w.mu.Unlock()
		return len(b), nil
	}
	var errLen error
	if w.clen >= 0 && w.written+int64(len(b)) > w.clen {
		b, errLen = b[:w.clen-w.written], http.ErrContentLength
	}
	n := 0
	for len(b) > 0 {
		if w.closed {
			w.mu.Unlock()
			return n, errClientGone
		}
		if w.ended { // reset by a fault
			err := w.bodyErr
			w.mu.Unlock()
			if err == nil {
				err = errClientGone
			}
			return n, err
		}
		if space := pipeLimit - w.buf.Len(); space > 0 {
			c := min(space, len(b))
			w.buf.Write(b[:c])
			w.written += int64(c)
			n, b = n+c, b[c:]
			signal(w.dataReady)
			continue
		}
		w.mu.Unlock()
		select { // wait for the client to read, close or give up
		case <-w.spaceReady:
		case <-w.handlerCtx.Done():
			return n, errClientGone
		}
		w.mu.Lock()
	}
	w.mu.Unlock()
	return n, errLen
}

// Flush sends the head, if it has not gone yet; written bytes are always readable at once.
func (w *pipeWriter) Flush() {
	w.WriteHeader(http.StatusOK) // ignored if written
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendHeadLocked()
}

func (w *pipeWriter) sendHeadLocked() {
	if w.headSent || w.headErr != nil {
		return
	}
	w.headSent = true
	w.sent = w.header.Clone()
	close(w.headReady)
}

// resetConnection fails the exchange as a reset connection would.
func (w *pipeWriter) resetConnection() { w.fail(newResetError(), newResetError()) }

// fail ends the exchange: before the head with headErr, after it with bodyErr.
func (w *pipeWriter) fail(headErr, bodyErr error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended = true
	if !w.headSent && w.headErr == nil {
		w.headErr = headErr
		close(w.headReady)
	}
	w.bodyErr = bodyErr
	signal(w.dataReady)
	signal(w.spaceReady)
}

// finish ends the response once the handler has returned (or panicked with panicked).
func (w *pipeWriter) finish(panicked any) {
	if panicked != nil {
		w.mu.Lock()
		complete := w.clen >= 0 && w.written >= w.clen
		w.mu.Unlock()
		if !complete {
			w.fail(errHandlerDied, io.ErrUnexpectedEOF)
			return
		}
	}
	w.WriteHeader(http.StatusOK) // ignored if written
	w.mu.Lock()
	w.sendHeadLocked()
	w.mu.Unlock()
	var err error
	if w.clen >= 0 && w.written < w.clen && !w.noBody {
		err = io.ErrUnexpectedEOF
	}
	w.fail(nil, err)
}

// notifyClientDone registers f, to be called when the client closes the body or gives up
// (at once, if it already has).
func (w *pipeWriter) notifyClientDone(f func()) {
	w.mu.Lock()
	gone := w.closed || w.clientCtx.Err() != nil
	if !gone {
		w.clientDone = f
	}
	w.mu.Unlock()
	if gone {
		f()
	}
}

// clientGone is the client giving up; with discard, its body is closed too. The handler's
// context is cancelled and its writes now fail.
func (w *pipeWriter) clientGone(discard bool) {
	w.mu.Lock()
	if discard {
		w.closed = true
		w.buf.Reset()
	}
	f := w.clientDone
	w.clientDone = nil
	w.mu.Unlock()
	w.cancel()
	signal(w.spaceReady)
	if f != nil {
		f()
	}
}

// response builds the client's response once headReady is closed.
func (w *pipeWriter) response(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.headErr != nil {
		return nil, w.headErr
	}
	resp := &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		ContentLength: w.clen,
		Request:       req,
	}
	switch {
	case w.method == http.MethodHead:
		resp.Body = http.NoBody
	case w.noBody || w.clen == 0:
		resp.Body, resp.ContentLength = http.NoBody, 0
	default:
		resp.Body = &pipeBody{w: w}
	}
	return resp, nil
}

// pipeBody is the client's side of an in-process response body.
type pipeBody struct{ w *pipeWriter }

func (b *pipeBody) Read(p []byte) (int, error) {
	w := b.w
	for {
		w.mu.Lock()
		switch {
		case w.closed:
			w.mu.Unlock()
			return 0, http.ErrBodyReadAfterClose
		case w.buf.Len() > 0:
			n, _ := w.buf.Read(p)
			w.mu.Unlock()
			signal(w.spaceReady)
			return n, nil
		case w.ended:
			err := w.bodyErr
			w.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		w.mu.Unlock()
		if len(p) == 0 {
			return 0, nil
		}
		select {
		case <-w.dataReady:
		case <-w.clientCtx.Done():
			w.clientGone(false)
			return 0, w.clientCtx.Err()
		}
	}
}

// Close discards the rest of the body and cancels the handler's context.
func (b *pipeBody) Close() error {
	b.w.clientGone(true)
	return nil
}
