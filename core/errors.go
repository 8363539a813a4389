package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrInvalidConfig is matched (with errors.Is) by every error NewBudget and
// the other constructors return for invalid configuration. The error itself
// is a *ConfigError naming the field.
var ErrInvalidConfig = errors.New("headgate: invalid configuration")

// ErrNoSlot is returned by TryAcquire when every concurrency slot
// (WithMaxInFlight) is taken.
var ErrNoSlot = errors.New("headgate: no free concurrency slot")

// A ConfigError reports an invalid configuration value and names its field.
type ConfigError struct {
	Field string // the option or field, e.g. "rate.Requests", "WithMaxInFlight"
	Msg   string // what is wrong with it
}

func (e *ConfigError) Error() string { return "headgate: " + e.Field + " " + e.Msg }

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

func configErrorf(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checkFactor validates a multiplier in (0, 1].
func checkFactor(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1 {
		return configErrorf(field, "must be in (0, 1], got %v", v)
	}
	return nil
}

// A RateLimitError is the one error a budget returns when it will not wait
// for a call: the server's pause, or the call's turn at the current pace,
// ends at or after the call's horizon — its context's deadline for Acquire
// and Check, "now" for TryAcquire. The call was never sent and gave its turn
// back. Match it with errors.As, or IsBudgetError for a yes or no.
//
// When the horizon was a context deadline (Deadline is set), the error also
// matches errors.Is(err, context.DeadlineExceeded), so code that handles
// deadlines keeps working. TryAcquire's refusals have no deadline and do
// not match it. Retryable always reports true: the same call succeeds after
// RetryAfter.
type RateLimitError struct {
	// RetryAfter is how long until the call could be sent: the time left in
	// the server's pause, or until the call's turn.
	RetryAfter time.Duration
	// StatusCode is the status of the response that asked for the pause
	// (a 200 whose headers said the quota was spent gives 200); 0 when the
	// wait is the budget's own pace.
	StatusCode int
	// Reason says what the call would have waited for: Paused, Paced or
	// Throttled.
	Reason Reason
	// Budget is the name of the budget (WithName), or "".
	Budget string
	// Deadline is the context deadline the call could not wait past; the
	// zero time when it had none (TryAcquire refuses what cannot go now).
	Deadline time.Time
}

func (e *RateLimitError) Error() string {
	name := ""
	if e.Budget != "" {
		name = " " + e.Budget
	}
	horizon := "past the deadline"
	if e.Deadline.IsZero() {
		horizon = "not now"
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("headgate: budget%s %s for %v after status %d, %s", name, e.Reason, e.RetryAfter, e.StatusCode, horizon)
	}
	return fmt.Sprintf("headgate: budget%s turn in %v (%s), %s", name, e.RetryAfter, e.Reason, horizon)
}

// Retryable reports true: the call may be sent again after RetryAfter.
func (e *RateLimitError) Retryable() bool { return true }

// Is makes a RateLimitError with a Deadline match context.DeadlineExceeded.
func (e *RateLimitError) Is(target error) bool {
	return target == context.DeadlineExceeded && !e.Deadline.IsZero()
}

// IsBudgetError reports whether err (or any error it wraps, such as the
// *url.Error an http.Client returns) is a *RateLimitError: it is shorthand
// for errors.As(err, new(*RateLimitError)), not a second kind of error.
// Retry layers use it not to retry such an error within the same horizon.
func IsBudgetError(err error) bool {
	var rl *RateLimitError
	return errors.As(err, &rl)
}

// ErrUnknownDimension is returned by AcquireCost for a Cost whose Dimension
// the budget was not built with.
var ErrUnknownDimension = errors.New("headgate: unknown dimension")

// ErrCostTooLarge is returned by AcquireCost at once for a cost above its
// dimension's burst, or a negative one: it could never be granted.
var ErrCostTooLarge = errors.New("headgate: cost above the dimension's burst")

// dimError names the dimension of an ErrUnknownDimension or ErrCostTooLarge.
type dimError struct {
	err           error
	name          string
	amount, burst int64
}

func (e *dimError) Error() string {
	if e.err == ErrCostTooLarge {
		return e.err.Error() + ": " + strconv.Quote(e.name) + " " + strconv.FormatInt(e.amount, 10) +
			" (burst " + strconv.FormatInt(e.burst, 10) + ")"
	}
	return e.err.Error() + ": " + strconv.Quote(e.name)
}

func (e *dimError) Unwrap() error { return e.err }
