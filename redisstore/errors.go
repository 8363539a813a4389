package redisstore

import (
	"errors"
	"time"
)

// ErrUnavailable is matched (with errors.Is) by every error the store
// returns because Redis failed: unreachable, too slow (WithTimeout), an
// error reply, or down within the probe interval. The error itself is an
// *Error.
var ErrUnavailable = errors.New("headgate: redis store unavailable")

// An Error reports a call to Redis that failed. With WithFailClosed (the
// default) the budget's Acquire returns it as is, and the request is not
// sent. It matches ErrUnavailable and unwraps to the client's error. Its
// text never carries credentials: go-redis errors name the address, not
// the password.
type Error struct {
	Op string // "take", "refund", "report", "status", "lease" or "release"
	// Err is the client's error, or the timeout.
	Err error
	// Skipped is true when the store did not call Redis because a call
	// failed within the probe interval; Err is that call's error.
	Skipped bool
}

func (e *Error) Error() string {
	msg := "headgate: redis store " + e.Op + ": "
	if e.Skipped {
		msg += "not tried, down since: "
	}
	if e.Err == nil {
		return msg + "unavailable"
	}
	return msg + e.Err.Error()
}

// Unwrap returns the client's error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *Error) Is(target error) bool { return target == ErrUnavailable }

// errTimeout is a call that had no reply within WithTimeout. It does not
// match context.DeadlineExceeded: the caller's deadline did not pass. Its
// cause, when known, is why a fresh connection to Redis fails (see
// Store.diagnose), so an outage reads as the refused connection it is.
type errTimeout struct {
	d     time.Duration
	cause error
}

func (e errTimeout) Error() string {
	if e.cause != nil {
		return "no reply within " + e.d.String() + ": " + e.cause.Error()
	}
	return "no reply within " + e.d.String()
}

func (e errTimeout) Unwrap() error { return e.cause }

func (e errTimeout) Timeout() bool { return true }

func isStoreError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
