package core

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// A RateLimitError is returned when a call cannot be sent before its context
// deadline: the budget is paused by the server past the deadline, or the
// call's turn at the current pace comes at or after it. The call was never
// sent and gave its turn back.
//
// It matches errors.Is(err, context.DeadlineExceeded), so code that handles
// deadlines keeps working, and errors.As(err, **RateLimitError) for the
// details. Retryable always reports true: the same call succeeds after
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
}

func (e *RateLimitError) Error() string {
	name := ""
	if e.Budget != "" {
		name = " " + e.Budget
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("headgate: budget%s %s for %v after status %d, past the deadline", name, e.Reason, e.RetryAfter, e.StatusCode)
	}
	return fmt.Sprintf("headgate: budget%s turn in %v (%s), past the deadline", name, e.RetryAfter, e.Reason)
}

// Retryable reports true: the call may be sent again after RetryAfter.
func (e *RateLimitError) Retryable() bool { return true }

// Is makes a RateLimitError match context.DeadlineExceeded.
func (e *RateLimitError) Is(target error) bool { return target == context.DeadlineExceeded }

// IsBudgetError reports whether err (or any error it wraps, such as the
// *url.Error an http.Client returns) comes from a budget refusing to wait
// past a deadline. Retry layers use it not to retry such an error within
// the same deadline: the call is Retryable, but only after RetryAfter,
// which lies past the deadline the caller gave.
func IsBudgetError(err error) bool {
	var rl *RateLimitError
	return errors.As(err, &rl)
}
