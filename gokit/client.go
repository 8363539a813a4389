package gokit

import (
	"context"
	"io"
	"net/http"
	"time"

	httptransport "github.com/go-kit/kit/transport/http"

	"github.com/headgate-go/headgate/core"
)

// SetClient returns a go-kit HTTP client option that sends every request
// through budget b: it puts a core.Transport on b (built with opts:
// core.WithLane gives a path a budget of its own) under a copy of client and
// hands that copy to httptransport.SetClient. This is the recommended wiring
// for go-kit HTTP endpoints; use it alone, with no limiter middleware and no
// ClientFeedback on the same budget.
//
// Every request the client sends (every redirect hop, every lb.Retry try)
// waits for a concurrency slot, for any server pause and for its turn, and
// its response is fed back to the budget, so one call spends exactly one
// turn per request sent. The slot is held until the response body is closed:
// by go-kit when the endpoint returns, or by the caller with
// httptransport.BufferedStream(true). A request whose wait cannot end before
// its context's deadline is never sent: the endpoint returns core's
// *core.RateLimitError wrapped in the *url.Error an http.Client returns (test
// it with core.IsBudgetError or errors.As). The wait counts against
// client.Timeout.
//
// It also closes a response body go-kit leaves open: with BufferedStream, a
// decoder that returns an error leaves the body, and its slot, to nobody.
//
// client nil means a zero http.Client (http.DefaultTransport, no timeout);
// client itself is never modified. SetClient panics if b is nil
// (core.Disabled() for no budget), or if client already sends through a
// core.Transport on b, where every request would take two turns.
func SetClient(client *http.Client, b *core.Budget, opts ...core.TransportOption) httptransport.ClientOption {
	if b == nil {
		panic("hgkit: SetClient needs a budget (core.Disabled() for none)")
	}
	var c http.Client
	if client != nil {
		c = *client
	}
	if t, ok := c.Transport.(*core.Transport); ok && t.Budget() == b {
		panic("hgkit: SetClient: the client already sends through a transport on this budget (every request would take two turns)")
	}
	c.Transport = core.NewTransport(c.Transport, b, opts...)
	return func(kc *httptransport.Client) {
		httptransport.SetClient(&c)(kc)
		closeOnDecodeError(kc)
	}
}

// ClientFeedback returns a go-kit HTTP client option that feeds every
// response the client receives to b, for endpoints paced by
// NewDelayingLimiter or NewErroringLimiter instead of SetClient. A server's
// pause then pauses every endpoint spending from b, and adaptive throttling
// sees every status.
//
// When a limiter on b admitted the call, the response is fed to the call's
// own permit, which knows when it was sent; otherwise it is fed to b with the
// time the request left (a ClientBefore), so a burst of refusals sent
// together slows the budget once. (A budget on a core.WithStore places that
// time on the store's clock by the offset its last turn measured; until it
// has taken a turn, each refusal counts as sent just now.)
// ClientFeedback sends nothing and spends no turn. Do not combine it with
// SetClient on the same budget: the budget's transport already feeds every
// response back.
//
// It sees the response of each http.Client.Do, that is the last hop of a
// redirect chain. Like SetClient, it closes the body a BufferedStream client
// leaves open when the decoder fails. It panics if b is nil
// (core.Disabled() for no budget).
func ClientFeedback(b *core.Budget) httptransport.ClientOption {
	if b == nil {
		panic("hgkit: ClientFeedback needs a budget (core.Disabled() for none)")
	}
	key := sentKey{b}
	before := func(ctx context.Context, _ *http.Request) context.Context {
		if callFor(ctx, b) != nil {
			return ctx
		}
		return context.WithValue(ctx, key, time.Now())
	}
	after := func(ctx context.Context, resp *http.Response) context.Context {
		if c := callFor(ctx, b); c != nil {
			c.observe(resp.StatusCode, resp.Header)
			return ctx
		}
		sent, _ := ctx.Value(key).(time.Time)
		b.Observe(resp.StatusCode, resp.Header, sent)
		return ctx
	}
	return func(kc *httptransport.Client) {
		httptransport.ClientBefore(before)(kc)
		httptransport.ClientAfter(after)(kc)
		closeOnDecodeError(kc)
	}
}

// sentKey is the context key of the time a request left, per budget.
type sentKey struct{ b *core.Budget }

// bodyKey is the context key of the response body go-kit handed to the
// decoder.
type bodyKey struct{}

// closeOnDecodeError closes the response body when the endpoint fails after
// a response arrived. go-kit closes it itself unless BufferedStream is on;
// with BufferedStream, a decoder error returns no response, so the body
// (and the budget slot it holds under SetClient) would stay open until the
// garbage collector found it. Closing an already closed body is harmless.
func closeOnDecodeError(kc *httptransport.Client) {
	httptransport.ClientAfter(func(ctx context.Context, resp *http.Response) context.Context {
		return context.WithValue(ctx, bodyKey{}, resp.Body)
	})(kc)
	httptransport.ClientFinalizer(func(ctx context.Context, err error) {
		if err == nil {
			return
		}
		if body, ok := ctx.Value(bodyKey{}).(io.Closer); ok && body != nil {
			body.Close()
		}
	})(kc)
}
