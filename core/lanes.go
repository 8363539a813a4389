package core

import "strings"

// A lane gives requests whose path holds a fragment a budget of their own.
type lane struct {
	fragment string // "/seg" or "/seg1/seg2": leading slash, no trailing one
	budget   *Budget
}

// WithLane gives requests whose URL path holds fragment a budget of their
// own instead of the transport's. A fragment is one or more whole path
// segments matched anywhere in the path: "/exports" matches "/v2/exports"
// and "/v2/exports/orders.csv", not "/v2/exports-archive". Lanes are tried
// in the order given and the first match wins. A lane's budget may be
// shared with other transports: it is one quota, spent from together.
//
// WithLane panics on an empty fragment or a nil budget, as http.Handle does
// for a bad pattern.
func WithLane(fragment string, b *Budget) TransportOption {
	f := "/" + strings.Trim(fragment, "/")
	if f == "/" || b == nil {
		panic("headgate: WithLane needs a non-empty path fragment and a budget, got " + strings.TrimSpace(fragment))
	}
	return transportOptionFunc(func(t *Transport) {
		t.lanes = append(t.lanes, lane{fragment: f, budget: b})
	})
}

// matches reports whether path holds the lane's fragment as whole segments.
func (l *lane) matches(path string) bool {
	for i := 0; i+len(l.fragment) <= len(path); {
		j := strings.Index(path[i:], l.fragment)
		if j < 0 {
			return false
		}
		end := i + j + len(l.fragment)
		if end == len(path) || path[end] == '/' {
			return true
		}
		i += j + 1
	}
	return false
}
