package gokit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/ratelimit"

	"github.com/headgate-go/headgate/core"
)

// An Acquirer hands out turns to send. *core.Budget implements it; the
// limiters need nothing else of a budget, so a test may pass a double
// (whose permits should come from a real budget).
type Acquirer interface {
	// Acquire waits for the call's turn, as core.Budget.Acquire does.
	Acquire(ctx context.Context) (core.Permit, error)
}

// ErrLimited is matched, with errors.Is, by the error NewErroringLimiter
// returns when the budget has no turn free now. It is go-kit's own
// ratelimit.ErrLimited, so code written for go-kit's erroring limiter keeps
// working unchanged.
var ErrLimited = ratelimit.ErrLimited

// NewDelayingLimiter returns an endpoint.Middleware that waits for the
// budget before every call: for a concurrency slot, for the end of any
// server pause and for the call's turn. It is the headgate form of go-kit's
// ratelimit.NewDelayingLimiter.
//
// The wait honours the context: a call whose turn, or the end of the
// server's pause, comes at or after the context's deadline fails at once
// with core's *core.RateLimitError, returned as is (it matches
// errors.Is(err, context.DeadlineExceeded)); a call cancelled while it waits
// returns the context's error. Either way the call is never sent.
//
// The call holds its slot (core.WithMaxInFlight) until the wrapped endpoint
// returns. Responses reach the budget through ClientFeedback on the go-kit
// HTTP client, or through a *ResponseError the decoder returns. Do not also
// put the budget's transport (SetClient) under the same endpoint: each call
// would spend two turns.
//
// Put it inside lb.Retry (on the endpoints the sd.Factory builds) so each
// try spends its own turn and waits for the pause the previous try caused.
// It panics if b is nil (core.Disabled() for no budget).
func NewDelayingLimiter(b Acquirer) endpoint.Middleware {
	if b == nil {
		panic("hgkit: NewDelayingLimiter needs a budget (core.Disabled() for none)")
	}
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		return func(ctx context.Context, request interface{}) (interface{}, error) {
			p, err := b.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return serve(ctx, p, next, request)
		}
	}
}

// A TryAcquirer hands out turns only when one is free now.
// *core.Budget implements it.
type TryAcquirer interface {
	// TryAcquire admits the call if it can go now, as
	// core.Budget.TryAcquire does, and never waits.
	TryAcquire(ctx context.Context) (core.Permit, error)
}

// NewErroringLimiter returns an endpoint.Middleware that fails a call at
// once when the budget has no turn free now, instead of waiting: the
// headgate form of go-kit's ratelimit.NewErroringLimiter. It uses
// core.Budget.TryAcquire, which never goes before callers already waiting.
//
// The error always matches errors.Is(err, ErrLimited) (go-kit's
// ratelimit.ErrLimited). When the budget's pace or a server pause is the
// reason, errors.As(err, &rl) with rl a *core.RateLimitError gives core's
// own error, with RetryAfter (how long until a turn) and, for a pause, the
// status that asked for it; core.IsBudgetError reports true. When every
// concurrency slot (core.WithMaxInFlight) is taken there is no such time to
// tell, and only ErrLimited matches. The error does not match
// context.DeadlineExceeded: no deadline of the caller's passed. A context
// already done returns its own error, as is. A refused call is never sent
// and spends no turn.
//
// An admitted call behaves as under NewDelayingLimiter: it holds its slot
// until the wrapped endpoint returns and its response reaches the budget
// through ClientFeedback or a *ResponseError. It panics if b is nil
// (core.Disabled() for no budget).
func NewErroringLimiter(b TryAcquirer) endpoint.Middleware {
	if b == nil {
		panic("hgkit: NewErroringLimiter needs a budget (core.Disabled() for none)")
	}
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		return func(ctx context.Context, request interface{}) (interface{}, error) {
			p, err := tryAcquire(ctx, b)
			if err != nil {
				return nil, err
			}
			return serve(ctx, p, next, request)
		}
	}
}

// tryAcquire takes a turn only if one is free now, and turns core's
// refusals into the limiter's.
func tryAcquire(ctx context.Context, b TryAcquirer) (core.Permit, error) {
	p, err := b.TryAcquire(ctx)
	if err == nil {
		return p, nil
	}
	var rl *core.RateLimitError
	switch {
	case errors.As(err, &rl):
		return core.Permit{}, &limitedError{rl: rl}
	case errors.Is(err, core.ErrNoSlot):
		return core.Permit{}, &limitedError{}
	}
	return core.Permit{}, err // the caller's context ended: its error, as is
}

// limitedError is NewErroringLimiter's refusal.
type limitedError struct {
	rl *core.RateLimitError // core's error, or nil when every slot was taken
}

func (e *limitedError) Error() string {
	if e.rl == nil {
		return "headgate: rate limit exceeded: every concurrency slot is taken"
	}
	name := ""
	if e.rl.Budget != "" {
		name = " " + e.rl.Budget
	}
	if e.rl.Reason == core.Paused {
		return fmt.Sprintf("headgate: rate limit exceeded: budget%s paused for %v after status %d", name, e.rl.RetryAfter, e.rl.StatusCode)
	}
	return fmt.Sprintf("headgate: rate limit exceeded: budget%s has its next turn in %v (%s)", name, e.rl.RetryAfter, e.rl.Reason)
}

// Unwrap makes the error match ErrLimited.
func (e *limitedError) Unwrap() error { return ErrLimited }

// As gives errors.As core's *core.RateLimitError itself, without matching
// the context.DeadlineExceeded it would match if it were unwrapped.
func (e *limitedError) As(target any) bool {
	if t, ok := target.(**core.RateLimitError); ok && e.rl != nil {
		*t = e.rl
		return true
	}
	return false
}

// callKey is the context key of the call a limiter admitted.
type callKey struct{}

// call is one endpoint call a limiter admitted: its permit, shared with
// ClientFeedback through the context so the response is fed to the permit
// that sent it. Several tries may share it (a limiter outside lb.Retry), and
// a try may outlive the call, so it is safe for concurrent use.
type call struct {
	p        core.Permit // set before the call is shared; read-only after
	parent   *call       // an outer limiter's call, or nil
	observed atomic.Bool // a response was fed to p
	once     sync.Once   // releases p
}

func (c *call) observe(status int, h http.Header) {
	c.observed.Store(true)
	c.p.Observe(status, h)
}

func (c *call) release() { c.once.Do(c.p.Release) }

// callFor returns the call in ctx whose permit b gave, or nil.
func callFor(ctx context.Context, b *core.Budget) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	for ; c != nil; c = c.parent {
		if c.p.Budget() == b {
			return c
		}
	}
	return nil
}

// serve runs next for a call admitted with p, releases p's slot when next
// returns (or panics), and feeds the budget a refusal the decoder returned
// as a *ResponseError if no response reached it through ClientFeedback.
func serve(ctx context.Context, p core.Permit, next endpoint.Endpoint, request interface{}) (interface{}, error) {
	c := &call{p: p}
	c.parent, _ = ctx.Value(callKey{}).(*call)
	defer c.release()
	response, err := next(context.WithValue(ctx, callKey{}, c), request)
	if err != nil && !c.observed.Load() {
		var re *ResponseError
		if errors.As(err, &re) {
			c.observe(re.StatusCode, re.Header)
		}
	}
	return response, err
}
