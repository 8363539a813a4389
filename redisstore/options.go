package redisstore

import (
	"fmt"
	"math"
	"time"

	"github.com/headgate-go/headgate/core"
)

// Defaults of the options.
const (
	// DefaultTimeout bounds each call to Redis (WithTimeout).
	DefaultTimeout = 200 * time.Millisecond
	// DefaultProbeInterval is how long the store leaves Redis alone after a
	// failure before it tries again (WithProbeInterval).
	DefaultProbeInterval = time.Second
	// DefaultTTL is how long a budget's state outlives its last use
	// (WithTTL).
	DefaultTTL = 10 * time.Minute
	// DefaultLeaseTTL is how long a lease outlives a process that stopped
	// renewing it (WithLeaseTTL).
	DefaultLeaseTTL = 30 * time.Second
)

// An Option configures a Store. Options are applied in order; an invalid
// value makes New return an error naming the option (it matches
// core.ErrInvalidConfig). A nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	timeout       time.Duration
	probeInterval time.Duration
	ttl           time.Duration
	failOpen      bool
	share         float64 // the fallback's share of the rate, in (0, 1]; failOpen only
	onFailure     func(error)
	onRecover     func()
	maxInFlight   int
	leaseTTL      time.Duration
	errs          []error
}

func newConfig(opts []Option) config {
	c := config{
		timeout:       DefaultTimeout,
		probeInterval: DefaultProbeInterval,
		ttl:           DefaultTTL,
		leaseTTL:      DefaultLeaseTTL,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

func (c *config) failf(field, format string, args ...any) {
	c.errs = append(c.errs, &core.ConfigError{Field: "redisstore." + field, Msg: fmt.Sprintf(format, args...)})
}

// WithTimeout bounds every call the store makes to Redis: a call that has
// no reply within d counts as a failure (see WithFailOpen and
// WithFailClosed), whatever the client's own timeouts. The default is
// DefaultTimeout (200 ms); d must be positive.
//
// The store stops waiting at d, but go-redis only abandons the connection
// at its own ReadTimeout unless the client was built with
// ContextTimeoutEnabled: true, which is recommended (it also spares each
// call a goroutine of its own; see Store).
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d <= 0 {
			c.failf("WithTimeout", "must be positive, got %v", d)
		}
		c.timeout = d
	})
}

// WithFailClosed makes calls fail while Redis is unreachable or slow:
// Take returns an *Error (which matches ErrUnavailable), so the budget's
// Acquire returns it and the request is not sent. It is the default: a
// fleet never spends more than its one budget.
func WithFailClosed() Option {
	return optionFunc(func(c *config) { c.failOpen, c.share = false, 0 })
}

// WithFailOpen makes the store fall back to a budget in this process while
// Redis is unreachable or slow, at share of the rate (and of the burst, at
// least 1): with N processes, a share of 1/N keeps the fleet within its
// quota. The fallback keeps its own pause and adaptive factor; while Redis
// is up it hears every response too and adopts the pause and factor of
// every reply from Redis, so a pause in force when Redis fails is kept,
// whichever process heard it. share must be in (0, 1]. The default is WithFailClosed.
func WithFailOpen(share float64) Option {
	return optionFunc(func(c *config) {
		if math.IsNaN(share) || share <= 0 || share > 1 {
			c.failf("WithFailOpen", "share must be in (0, 1], got %v", share)
		}
		c.failOpen, c.share = true, share
	})
}

// WithProbeInterval sets how long the store leaves Redis alone after a
// failed call: until then calls fail at once (fail closed) or use the
// fallback (fail open) instead of each waiting for a timeout; then one call
// tries Redis again. The default is DefaultProbeInterval (1 s); 0 tries
// Redis on every call. d must not be negative.
func WithProbeInterval(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < 0 {
			c.failf("WithProbeInterval", "must not be negative, got %v", d)
		}
		c.probeInterval = d
	})
}

// WithOnFailure sets a function called with the error each time a call to
// Redis fails (at most once per probe interval while Redis stays down,
// plus calls already under way). It is called on the caller's goroutine,
// outside any lock, and should return quickly. The error never carries
// credentials. The default, and nil, report nothing.
func WithOnFailure(f func(error)) Option {
	return optionFunc(func(c *config) { c.onFailure = f })
}

// WithOnRecover sets a function called when a call to Redis succeeds after
// a failure: the fleet spends from the shared budget again. The default,
// and nil, report nothing.
func WithOnRecover(f func()) Option {
	return optionFunc(func(c *config) { c.onRecover = f })
}

// WithTTL sets how long a budget's state stays in Redis after its last use
// (beyond the end of any pause or reserved turn): an abandoned budget
// leaves nothing behind, and an idle one that expires loses nothing but a
// lowered adaptive factor. The default is DefaultTTL (10 minutes); d must
// be at least a millisecond.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < time.Millisecond {
			c.failf("WithTTL", "must be at least 1ms, got %v", d)
		}
		c.ttl = d
	})
}

// WithMaxInFlight caps the requests open at once across the fleet at n,
// with leases: see Store.AcquireLease and NewLeaseTransport. It is not the
// budget's core.WithMaxInFlight, which caps one process. The default, and
// 0, mean no cap (AcquireLease returns at once); n must not be negative.
// Every process sharing the key should use the same n.
func WithMaxInFlight(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.failf("WithMaxInFlight", "must not be negative, got %d", n)
		}
		c.maxInFlight = n
	})
}

// WithLeaseTTL sets how long a lease lasts without renewal. A held lease is
// renewed every third of d, so only a process that died (or stalled for d)
// loses its leases, and they come back to the fleet d after its last
// renewal. The default is DefaultLeaseTTL (30 s); d must be at least 10 ms.
func WithLeaseTTL(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < 10*time.Millisecond {
			c.failf("WithLeaseTTL", "must be at least 10ms, got %v", d)
		}
		c.leaseTTL = d
	})
}
