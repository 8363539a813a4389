package core

import (
	"io"
	"log"
	"net/http"
	"runtime"
	"sync/atomic"
)

// Transport is an http.RoundTripper that spends from a budget for every
// request it sends: each attempt (every redirect hop, retry and hedge) waits
// for a slot, for any server pause and for its turn, is sent, and its
// response is fed back to the budget. A request the next transport sends
// more than once on its own (net/http re-sends a replayable request when a
// reused keep-alive connection fails) waits for a turn for every attempt,
// holding its one slot; a re-attempt whose turn cannot come before the
// deadline is not sent, and the call fails with the budget's error. A response body holds its slot until
// it is closed, read to the end or fails to read.
//
// Transport follows the http.RoundTripper contract: it never reads or
// changes the caller's request, closes the request body on every early
// return, returns a response with a nil error (a 429 is a response, not an
// error) or an error with no response, and passes http.NoBody through
// untouched. A wait that cannot end before the request context's deadline
// fails at once with a *RateLimitError, which an http.Client wraps in a
// *url.Error (test it with IsBudgetError or errors.As).
//
// The wait counts against http.Client.Timeout, like any time spent in a
// RoundTripper.
type Transport struct {
	next   http.RoundTripper
	budget *Budget
	lanes  []lane
	usage  string // WithUsage's dimension, or ""
}

var _ http.RoundTripper = (*Transport)(nil)

// A TransportOption configures a Transport.
type TransportOption interface{ applyTransport(*Transport) }

type transportOptionFunc func(*Transport)

func (f transportOptionFunc) applyTransport(t *Transport) { f(t) }

// NewTransport returns a Transport that sends through next (nil means
// http.DefaultTransport) and spends from b, or from the budget of the
// first lane (WithLane) whose fragment the request path holds. It panics
// if b is nil or a lane is invalid, as http.Handle does for a bad pattern.
func NewTransport(next http.RoundTripper, b *Budget, opts ...TransportOption) *Transport {
	if b == nil {
		panic("headgate: NewTransport needs a budget (use core.Disabled() for none)")
	}
	if next == nil {
		next = http.DefaultTransport
	}
	t := &Transport{next: next, budget: b}
	for _, o := range opts {
		if o != nil {
			o.applyTransport(t)
		}
	}
	b.expectAnswers()
	for i := range t.lanes {
		t.lanes[i].budget.expectAnswers()
	}
	return t
}

// Budget returns the transport's default budget (the one for requests no
// lane matches).
func (t *Transport) Budget() *Budget { return t.budget }

// BudgetFor returns the budget a request to path spends from: the first
// lane whose fragment the path holds, or the transport's own budget.
func (t *Transport) BudgetFor(path string) *Budget {
	for i := range t.lanes {
		if t.lanes[i].matches(path) {
			return t.lanes[i].budget
		}
	}
	return t.budget
}

// RoundTrip waits for the request's turn, sends it through the next
// transport and feeds the response back to the budget.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	b := t.BudgetFor(req.URL.Path)
	permit, err := acquireFor(b, req)
	if err != nil {
		if req.Body != nil && req.Body != http.NoBody {
			req.Body.Close()
		}
		return nil, err
	}
	w := &wireTurns{p: permit}
	p := &w.p
	handedOff := false
	costed, cost := attachCost(req, *p) // req, or its copy that names the cost (transport_cost.go)
	defer func() {
		if !handedOff { // an error, a body-less response, or a panic in next
			cost.failed()
			p.Release()
		}
	}()
	sent := costed
	if b.pacer != nil { // a budget that never waits has no turns to spend
		sent = w.withWireTurns(costed) // every attempt on the wire spends a turn
		// The last look: a pause known since the grant (pause_held.go).
		if err := b.lastLook(req.Context(), p); err != nil {
			if req.Body != nil && req.Body != http.NoBody {
				req.Body.Close()
			}
			return nil, err
		}
	}
	resp, err := t.next.RoundTrip(sent)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // a broken next returned both
		}
		if w.err != nil {
			return nil, w.err // a re-attempt refused its turn: it was not sent
		}
		b.lost(p.sent, b.now()) // (no answer will come)
		return nil, err
	}
	if resp.Request == sent {
		resp.Request = costed // Commit finds the cost through its context
	}
	observeOrClose(p, resp)
	if resp.Body == nil || resp.Body == http.NoBody {
		cost.respond(req, resp.StatusCode).settle() // nothing to commit from
		return resp, nil
	}
	if p.slot.idx1 == 0 && p.res == nil {
		return resp, nil
	}
	cost.respond(req, resp.StatusCode)
	resp.Body = wrapBody(t.readUsage(resp, cost), b, p.slot, cost)
	handedOff = true
	return resp, nil
}

// observeOrClose feeds resp to p. If the observer panics, the caller never
// gets resp, so its body is closed here before the panic goes on: left
// open, it would keep its connection and net/http's goroutines for good.
func observeOrClose(p *Permit, resp *http.Response) {
	observed := false
	defer func() {
		if !observed && resp.Body != nil {
			resp.Body.Close()
		}
	}()
	p.observeResponse(resp) // Observe, with the body prefix a profile reads (transport_profile.go)
	observed = true
}

// CloseIdleConnections closes the idle connections of the next transport,
// if it has any.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// slotHolder frees one concurrency slot exactly once. It is kept apart
// from the body that owns it so the garbage collector's cleanup can free the
// slot of a body that was dropped without Close.
type slotHolder struct {
	b    *Budget
	slot slotRef // idx1 0: no slot, only a cost (AcquireCost)
	done atomic.Bool
	cost *costHolder // the attempt's cost to settle on Close, or nil
}

func (s *slotHolder) release() bool {
	if s.done.CompareAndSwap(false, true) {
		if s.slot.idx1 > 0 {
			s.b.releaseSlot(s.slot)
		}
		return true
	}
	return false
}

// releaseBody holds a slot until the body is closed, read to the end, or
// fails to read.
//
// A body nobody closes would hold its slot forever; as a safety net, when
// the garbage collector finds the body unreachable it frees the slot and
// the budget reports a LeakedBody event. That is late and not guaranteed
// (a collection must run), so always close bodies.
type releaseBody struct {
	rc      io.ReadCloser
	slot    *slotHolder
	cleanup runtime.Cleanup
}

// releaseWriteBody keeps the io.Writer of a 101 Switching Protocols body.
type releaseWriteBody struct{ *releaseBody }

func (b releaseWriteBody) Write(p []byte) (int, error) { return b.rc.(io.Writer).Write(p) }

func wrapBody(rc io.ReadCloser, b *Budget, slot slotRef, cost *costHolder) io.ReadCloser {
	s := &slotHolder{b: b, slot: slot, cost: cost}
	body := &releaseBody{rc: rc, slot: s}
	body.cleanup = runtime.AddCleanup(body, freeLeaked, s)
	if _, ok := rc.(io.Writer); ok {
		return releaseWriteBody{body}
	}
	return body
}

// freeLeaked is the cleanup of a body dropped without Close: it frees the
// slot and reports LeakedBody. It runs on the runtime's cleanup goroutine,
// with no caller to hand a panic to, so an observer that panics is
// recovered and logged (log.Printf) rather than crashing the process.
func freeLeaked(s *slotHolder) {
	s.cost.closed()
	if !s.release() {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			log.Printf("headgate: budget %q: the observer panicked on LeakedBody: %v", s.b.cfg.name, r)
		}
	}()
	s.b.emit(Event{Reason: LeakedBody})
}

func (b *releaseBody) done() {
	if b.slot.release() && b.slot.cost == nil { // a cost is settled on Close, or by the cleanup
		b.cleanup.Stop()
	}
}

// Read reads from the body and frees the slot at the end or on an error.
func (b *releaseBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.done()
	}
	return n, err
}

// Close closes the body and frees the slot.
func (b *releaseBody) Close() error {
	err := b.rc.Close()
	b.slot.cost.closed() // a cost nobody committed (see Commit)
	b.done()
	if b.slot.cost != nil {
		b.cleanup.Stop()
	}
	return err
}
