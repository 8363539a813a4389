package core

import (
	"context"
	"net/http"
	"sync/atomic"
)

// costKey is the context key of WithCost.
type costKey struct{}

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

// acquireFor is the Transport's Acquire: AcquireCost when the request
// carries costs or the budget has dimensions, Acquire otherwise.
func acquireFor(b *Budget, ctx context.Context) (Permit, error) {
	if costs := CostFrom(ctx); costs != nil || b.dims != nil {
		return b.AcquireCost(ctx, costs...)
	}
	return b.Acquire(ctx)
}

// Commit settles the cost of the request that got resp from a Transport at
// the actual costs the response reports (for an LLM API, its
// usage.total_tokens), exactly like Permit.Commit. Call it after decoding
// the body and before closing it. It reports whether there was a cost to
// settle: false for a response that did not come through a Transport with
// WithCost or dimensions, or whose cost is already settled.
//
// A response body closed (or dropped) without Commit settles by its
// status: a 2xx response keeps its estimate as its cost, any other
// response gives the estimate back (the request's turn stays spent, since
// the request reached the server). A transport error gives the estimate
// back as well.
func Commit(resp *http.Response, actual ...Cost) bool {
	if resp == nil {
		return false
	}
	var rb *releaseBody
	switch body := resp.Body.(type) {
	case *releaseBody:
		rb = body
	case releaseWriteBody:
		rb = body.releaseBody
	}
	if rb == nil || rb.slot.cost == nil || !rb.slot.cost.done.CompareAndSwap(false, true) {
		return false
	}
	p := rb.slot.cost.p
	p.Commit(actual...)
	return true
}

// costHolder settles one response's cost once: by Commit, or by its
// status when the body is closed.
type costHolder struct {
	p      Permit
	status int
	done   atomic.Bool
}

// costHolderFor returns the holder of p's cost for a response with
// status, or nil when p reserved none.
func costHolderFor(p Permit, status int) *costHolder {
	if p.res == nil {
		return nil
	}
	return &costHolder{p: p, status: status}
}

// settle settles by status unless Commit did; nil does nothing.
func (c *costHolder) settle() {
	if c == nil || !c.done.CompareAndSwap(false, true) {
		return
	}
	settleByStatus(&c.p, c.status)
}

// settleByStatus keeps the estimate of a 2xx response as its cost and gives
// any other response's estimate back.
func settleByStatus(p *Permit, status int) {
	if p.res == nil {
		return
	}
	if status >= 200 && status < 300 {
		now := p.b.now()
		p.b.mu.Lock()
		p.b.settleLocked(p.res, p.res.n, now)
		p.b.mu.Unlock()
		return
	}
	p.releaseCost()
}
