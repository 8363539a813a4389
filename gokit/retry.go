package gokit

import (
	"errors"

	"github.com/go-kit/kit/sd/lb"

	"github.com/headgate-go/headgate/core"
)

// RetryCallback returns an lb.Callback for lb.RetryWithCallback that keeps
// trying up to max tries in all, as lb.Retry(max, ...) does, but stops at
// once on a budget refusal: core's *core.RateLimitError (the budget's pause
// or turn comes after the retry's deadline, so every further try would fail
// the same way without being sent) or NewErroringLimiter's ErrLimited.
//
// lb.Retry itself never waits between tries; the budget does. With SetClient
// or a limiter on the endpoints lb.Retry calls, a try after a 429 (returned
// by the decoder, see CheckResponse) waits for the pause that 429 set and is
// sent when it ends. lb.RetryWithCallback wraps the final error in an
// lb.RetryError, which does not unwrap: match core's error in its Final
// field (errors.As(err, &retryErr), then core.IsBudgetError(retryErr.Final)).
func RetryCallback(max int) lb.Callback {
	return func(n int, err error) (keepTrying bool, replacement error) {
		if core.IsBudgetError(err) || errors.Is(err, ErrLimited) {
			return false, nil
		}
		return n < max, nil
	}
}
