package core

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
)

// Every attempt that reaches the wire spends a turn.
//
// Transport.RoundTrip spends one turn and hands the request to the next
// RoundTripper, which may send it more than once: net/http silently
// re-sends a replayable request when a reused keep-alive connection fails
// (its shouldRetryRequest), and HTTP/2 re-sends a request its server
// refused. Every attempt first asks for a connection, and httptrace's
// GetConn hook fires then, on the caller's goroutine, before anything of
// the attempt is written. The first attempt spends the permit's turn; each
// later one waits there for a turn of its own, under the request's
// deadline, holding the request's slot. A re-attempt that cannot have its
// turn before the deadline (or whose context ends first) is not sent: the
// HTTP/1 connection it is handed (GotConn) is closed before it is written
// to, the attempt fails, and RoundTrip returns the budget's error. (An
// HTTP/2 connection is shared by other requests and is left alone.)

// wireTurns is one RoundTrip's attempts: the permit and the trace that
// spends a turn for each attempt after the first. Its fields are only
// touched on the caller's goroutine, by RoundTrip and the trace's hooks
// (net/http calls GetConn and GotConn there, before the attempt is written).
type wireTurns struct {
	p        Permit
	ctx      context.Context
	trace    httptrace.ClientTrace
	attempts int
	err      error // why a re-attempt was refused its turn; then every later one is too
}

// withWireTurns returns req with a context whose trace spends a turn for
// every attempt after the first, composed with any trace req already has.
func (w *wireTurns) withWireTurns(req *http.Request) *http.Request {
	w.ctx = req.Context()
	w.trace.GetConn = w.getConn // GotConn is set only when a re-attempt is refused
	return req.WithContext(httptrace.WithClientTrace(w.ctx, &w.trace))
}

// getConn is called as each attempt asks for a connection.
func (w *wireTurns) getConn(string) {
	w.attempts++
	if w.attempts == 1 || w.err != nil {
		return // the permit's own turn, or already refused
	}
	sent, err := w.p.b.wireTurn(w.ctx)
	if err != nil {
		w.err = err
		caller := w.trace.GotConn // the caller's own hook, composed, or nil
		w.trace.GotConn = func(info httptrace.GotConnInfo) {
			w.gotConn(info)
			if caller != nil {
				caller(info)
			}
		}
		return
	}
	w.p.sent = sent // the response answers this attempt
}

// gotConn is called when an attempt has its connection, before it writes.
func (w *wireTurns) gotConn(info httptrace.GotConnInfo) {
	if w.err == nil || info.Conn == nil {
		return
	}
	if tc, ok := info.Conn.(interface{ ConnectionState() tls.ConnectionState }); ok &&
		tc.ConnectionState().NegotiatedProtocol == "h2" {
		return // shared with other requests
	}
	info.Conn.Close() // the refused attempt writes nothing
}

// wireTurn waits for the turn of a re-attempt: Acquire's turn, without a
// slot (the request holds one already). It returns when the turn was given.
func (b *Budget) wireTurn(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	at, err := b.pacer.turn(ctx, b.now(), b.deadline(ctx), nil, 0)
	return at, withDeadline(ctx, err)
}
