package resty

import (
	"net/http"

	"github.com/headgate-go/headgate/core"
)

// An Option configures Use. Options are applied in order; nil options are
// ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	lanes    []core.TransportOption
	statuses map[int]bool
}

func newConfig(opts []Option) config {
	c := config{statuses: map[int]bool{
		http.StatusTooManyRequests:    true,
		http.StatusServiceUnavailable: true,
	}}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithLane gives requests whose URL path holds fragment a budget of their
// own, exactly as core.WithLane does for core.NewTransport: a fragment is one
// or more whole path segments matched anywhere in the path, and the first
// matching lane wins. The retry wait of a request follows its lane's pause.
// The default is no lane: every request spends from the budget given to Use.
//
// WithLane panics on an empty fragment or a nil budget, as core.WithLane
// does.
func WithLane(fragment string, b *core.Budget) Option {
	return optionFunc(func(c *config) {
		c.lanes = append(c.lanes, core.WithLane(fragment, b))
	})
}

// WithRetryStatuses replaces the response statuses Use's retry condition
// retries. The default is 429 Too Many Requests and 503 Service
// Unavailable; add 403 for providers that refuse over-limit calls with it
// (GitHub among them). With no codes, no status is retried by Use's
// condition (transport errors still are).
func WithRetryStatuses(codes ...int) Option {
	return optionFunc(func(c *config) {
		c.statuses = make(map[int]bool, len(codes))
		for _, code := range codes {
			c.statuses[code] = true
		}
	})
}
