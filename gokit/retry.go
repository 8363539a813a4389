package gokit

import (
	"context"
	"errors"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/sd/lb"

	"github.com/headgate-go/headgate/core"
)

// Retry is lb.Retry for endpoints that spend from a budget: it tries up to
// max times in all within timeout, as lb.Retry(max, timeout, b) does, but
// stops at once on a budget refusal (see RetryCallback), and the error it
// returns lets errors.Is and errors.As reach the final try's error: core's
// *core.RateLimitError (core.IsBudgetError(err) reports true), a
// *ResponseError, ErrLimited. The error is still an lb.RetryError to
// errors.As, with every try's error in RawErrors; a type assertion
// err.(lb.RetryError) no longer matches. When timeout passes first, the
// context's error comes back as lb.Retry returns it.
//
// lb.Retry itself never waits between tries; the budget does: each try sent
// through SetClient (or a limiter on the endpoints the balancer hands out)
// waits for the pause the previous try's 429 set, and is sent when it ends.
func Retry(max int, timeout time.Duration, b lb.Balancer) endpoint.Endpoint {
	next := lb.RetryWithCallback(timeout, b, RetryCallback(max))
	return func(ctx context.Context, request interface{}) (interface{}, error) {
		response, err := next(ctx, request)
		var re lb.RetryError
		if errors.As(err, &re) {
			return response, retryError{re}
		}
		return response, err
	}
}

// retryError is an lb.RetryError that unwraps to itself and to its final
// error, which lb.RetryError does not.
type retryError struct{ lb.RetryError }

func (e retryError) Unwrap() []error { return []error{e.RetryError, e.Final} }

// RetryCallback returns an lb.Callback for lb.RetryWithCallback that keeps
// trying up to max tries in all, as lb.Retry(max, ...) does, but stops at
// once on a budget refusal: core's *core.RateLimitError (the budget's pause
// or turn comes after the retry's deadline, so every further try would fail
// the same way without being sent) or NewErroringLimiter's ErrLimited.
//
// lb.RetryWithCallback wraps the final error in an lb.RetryError, which does
// not unwrap: use Retry, whose error does, or match core's error in its
// Final field:
//
//	var re lb.RetryError
//	if errors.As(err, &re) && core.IsBudgetError(re.Final) { … }
func RetryCallback(max int) lb.Callback {
	return func(n int, err error) (keepTrying bool, replacement error) {
		if core.IsBudgetError(err) || errors.Is(err, ErrLimited) {
			return false, nil
		}
		return n < max, nil
	}
}
