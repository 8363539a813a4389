package core

import (
	"context"
	"net/http"
	"runtime"
	"sync/atomic"

	"github.com/headgate-go/headgate/core/internal/reqkey"
)

// Costs through a Transport.
//
// A request whose context carries costs (WithCost, WithCommit) reserves
// them with its turn; each attempt the Transport sends (every redirect hop
// and retry) reserves its own. An attempt's cost is settled once, by the
// first of: Commit(resp, …) on its response, its Commitment's Commit, the
// usage its body reports (WithUsage), or its status when its body is closed
// or collected: a 2xx keeps its estimate (under a Commitment it stays open
// for the Commitment instead), any other status gives it back. A transport
// error gives it back at once.
//
// The attempt's costHolder is found through contexts, never through the
// body's type, so it is found behind http.Client.Timeout (whose body wraps
// ours) and any body-wrapping transport above (otelhttp): the Transport
// sends a costed attempt as a shallow copy of the request whose context
// names its holder, and returns that copy as the response's Request.

// costKey is the context key of WithCost; holderKey names one attempt's
// costHolder on the context the Transport sends it with; commitKey is the
// context key of WithCommit.
type (
	costKey   struct{}
	holderKey struct{}
	commitKey struct{}
)

// WithCost returns a copy of ctx that makes a Transport reserve costs (the
// request's upper bound in the budget's extra dimensions, see
// WithDimension) with the request's turn, through AcquireCost. Without it a
// request costs nothing beyond its turn. It is also how an adapter passes
// costs down to the Transport.
func WithCost(ctx context.Context, costs ...Cost) context.Context {
	return context.WithValue(ctx, costKey{}, append([]Cost(nil), costs...))
}

// CostFrom returns the costs WithCost put in ctx, or nil.
func CostFrom(ctx context.Context) []Cost {
	c, _ := ctx.Value(costKey{}).([]Cost)
	return c
}

// acquireFor is the Transport's Acquire for req: AcquireCost when the
// request carries costs or the budget has dimensions, Acquire otherwise,
// under the request's key (place.go).
func acquireFor(b *Budget, req *http.Request) (Permit, error) {
	ctx := req.Context()
	if costs := CostFrom(ctx); costs != nil || b.dims != nil {
		return b.AcquireCost(ctx, costs...)
	}
	return b.acquireKeyed(ctx, reqkey.Of(req))
}

// Commit settles the cost of the request that got resp from a Transport at
// the actual costs the response reports (for an LLM API, its
// usage.total_tokens), exactly like Permit.Commit. Call it after decoding
// the body and before closing it (after, when the request was sent under
// WithCommit). It reports whether there was a cost to settle: false for a
// response that did not come through a Transport with WithCost or
// dimensions, or whose cost is already settled.
//
// Commit finds the request's cost through resp.Request's context, so it
// works behind http.Client.Timeout and under transports that wrap bodies.
func Commit(resp *http.Response, actual ...Cost) bool {
	if resp == nil || resp.Request == nil {
		return false
	}
	h, _ := resp.Request.Context().Value(holderKey{}).(*costHolder)
	return h.commit(actual)
}

// A Commitment settles the cost of a call made under its context once the
// caller knows it, for when the caller never sees the response: an SDK
// reads and closes the body itself and returns what it decoded (with
// openai-go, the ChatCompletion's Usage). Make one per call with WithCommit.
type Commitment struct{ s *commitState }

// commitState is a Commitment's open attempt. It is apart from the
// Commitment so the garbage collector's cleanup can settle the attempt of a
// Commitment dropped without Commit.
type commitState struct {
	open atomic.Pointer[costHolder] // the last attempt's cost, until settled
}

// WithCommit returns a copy of ctx that carries costs, as WithCost does, and
// the Commitment that settles them once the call returns:
//
//	ctx, c := core.WithCommit(ctx, core.Cost{Dimension: "tokens", Amount: 4_000})
//	out, err := client.Chat.Completions.New(ctx, params) // openai-go
//	if err == nil {
//		c.Commit(core.Cost{Dimension: "tokens", Amount: out.Usage.TotalTokens})
//	}
//
// Every attempt sent under ctx (an SDK's retries, redirect hops) reserves
// its own estimate. An attempt answered with a non-2xx status gives it back
// when its body is closed, as without WithCommit; a 2xx attempt's cost stays
// open for the Commitment, whose Commit settles the last such attempt (an
// earlier one, superseded by a new attempt, keeps its estimate). Commit with
// no costs settles at zero. A Commitment dropped without Commit keeps its
// estimate, settled when the garbage collector finds it; always Commit.
func WithCommit(ctx context.Context, costs ...Cost) (context.Context, *Commitment) {
	c := &Commitment{s: &commitState{}}
	runtime.AddCleanup(c, func(s *commitState) {
		if h := s.open.Swap(nil); h != nil {
			h.settle()
		}
	}, c.s)
	return context.WithValue(WithCost(ctx, costs...), commitKey{}, c), c
}

// Commit settles the last 2xx attempt sent under the Commitment's context
// at actual, exactly like Permit.Commit, and reports whether there was an
// open cost to settle: false when no attempt got a 2xx, or its cost was
// already settled (by an earlier Commit, Commit(resp, …) or WithUsage).
func (c *Commitment) Commit(actual ...Cost) bool {
	if c == nil {
		return false
	}
	return c.s.open.Swap(nil).commit(actual)
}

// costHolder settles one attempt's cost once: by a commit, or by its
// status when its body is closed.
type costHolder struct {
	p        Permit
	status   int
	deferred bool // a Commitment settles a 2xx; set before the response is seen
	done     atomic.Bool
}

// attachCost returns the request to send for an attempt with permit p and
// the holder of its cost: when p reserved a cost, a shallow copy of req
// whose context names the holder (for Commit(resp, …)); otherwise req and
// nil. A Commitment on req's context takes the holder as its open attempt
// once the response is in (see costHolder.respond).
func attachCost(req *http.Request, p Permit) (*http.Request, *costHolder) {
	if p.res == nil {
		return req, nil
	}
	h := &costHolder{p: p}
	ctx := req.Context()
	_, h.deferred = ctx.Value(commitKey{}).(*Commitment)
	return req.WithContext(context.WithValue(ctx, holderKey{}, h)), h
}

// respond records the attempt's status and, under a Commitment and with a
// 2xx, makes it the Commitment's open attempt; the one it supersedes keeps
// its estimate. It returns h.
func (h *costHolder) respond(req *http.Request, status int) *costHolder {
	if h == nil {
		return nil
	}
	h.status = status
	if h.deferred && is2xx(status) {
		if c, _ := req.Context().Value(commitKey{}).(*Commitment); c != nil {
			c.s.open.Swap(h).settle()
		}
	}
	return h
}

// commit settles at actual unless already settled; nil reports false.
func (h *costHolder) commit(actual []Cost) bool {
	if h == nil || !h.done.CompareAndSwap(false, true) {
		return false
	}
	h.p.Commit(actual...)
	return true
}

// closed settles by status when the attempt's body is closed (or dropped),
// unless a Commitment holds a 2xx open; nil does nothing.
func (h *costHolder) closed() {
	if h != nil && !(h.deferred && is2xx(h.status)) {
		h.settle()
	}
}

// settle settles by status unless already settled; nil does nothing.
func (h *costHolder) settle() {
	if h == nil || !h.done.CompareAndSwap(false, true) {
		return
	}
	settleByStatus(&h.p, h.status)
}

// failed marks the cost of an attempt that got no response as settled
// (Permit.Release gives it back); nil does nothing.
func (h *costHolder) failed() {
	if h != nil {
		h.done.Store(true)
	}
}

func is2xx(status int) bool { return status >= 200 && status < 300 }

// settleByStatus keeps the estimate of a 2xx response as its cost and gives
// any other response's estimate back.
func settleByStatus(p *Permit, status int) {
	if p.res == nil {
		return
	}
	if is2xx(status) {
		p.settle(p.res.n)
		return
	}
	p.releaseCost()
}
