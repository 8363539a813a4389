package redisstore

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// A Lease is one of the fleet's WithMaxInFlight slots, held by this
// process until Release. While held it is renewed every third of the lease
// TTL; if the process dies, the lease expires a TTL after its last renewal
// and the slot returns to the fleet.
type Lease struct {
	s     *Store
	id    string
	local bool // from the fail-open fallback's local cap

	mu       sync.Mutex
	timer    *time.Timer // renews the lease; guarded by mu
	released bool        // guarded by mu
}

// AcquireLease waits until fewer than WithMaxInFlight leases are held
// across the fleet, then takes one. Release it when the request is done
// (NewLeaseTransport does this when the response body is closed).
//
// Waiters poll Redis (from 2 ms, backing off to 50 ms, never past the
// first lease's expiry), so they are not served in arrival order. Without
// WithMaxInFlight it returns a Lease that holds nothing, at once. It
// returns ctx's error when ctx ends first, and an *Error when Redis fails
// and the store fails closed; failing open, it takes a slot of a local cap
// (the share of WithMaxInFlight, at least 1) instead.
//
// core.Budget's own WithMaxInFlight caps one process; this caps the fleet.
// Take the lease before the budget's slot and turn (NewLeaseTransport
// wraps a core.Transport in that order), so a request holds its lease
// from before its turn until its response is done.
func (s *Store) AcquireLease(ctx context.Context) (*Lease, error) {
	if s.cfg.maxInFlight == 0 {
		return &Lease{released: true}, nil
	}
	id := newLeaseID()
	backoff := 2 * time.Millisecond
	for {
		v, err := s.run(ctx, "lease", acquireScript, s.leases, s.leaseArgs(id, s.cfg.maxInFlight, s.cfg.leaseTTL.Milliseconds())...)
		switch {
		case err != nil && s.fb != nil && isStoreError(err):
			return s.acquireLocal(ctx)
		case err != nil:
			return nil, err
		}
		n, err := ints(v, 0, 1)
		if err != nil {
			return nil, err
		}
		if n[0] == 1 {
			l := &Lease{s: s, id: id}
			l.timer = time.AfterFunc(s.cfg.leaseTTL/3, l.renew)
			return l, nil
		}
		wait := min(backoff, time.Duration(n[1])*time.Millisecond)
		wait = wait/2 + rand.N(wait/2+1) // jitter: processes do not poll in step
		backoff = min(2*backoff, 50*time.Millisecond)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

func (s *Store) acquireLocal(ctx context.Context) (*Lease, error) {
	select {
	case s.fb.slots <- struct{}{}:
		return &Lease{s: s, local: true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Store) leaseArgs(extra ...any) []any {
	now := ""
	if s.clock != nil {
		now = strconv.FormatInt(s.clock()/1e6, 10)
	}
	return append([]any{now}, extra...)
}

// renew extends the lease and re-arms its timer while the lease is held.
// A lease that already expired (the process stalled for a whole TTL) is
// not renewed: its slot may be in use by another process by now.
func (l *Lease) renew() {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	ctx := context.Background()
	v, err := l.s.run(ctx, "lease", renewScript, l.s.leases, l.s.leaseArgs(l.id, l.s.cfg.leaseTTL.Milliseconds())...)
	if err == nil {
		if n, err := ints(v, 0); err == nil && n[0] == 0 {
			return // expired: nothing left to renew
		}
	}
	l.mu.Lock()
	if !l.released {
		l.timer.Reset(l.s.cfg.leaseTTL / 3)
	}
	l.mu.Unlock()
}

// Release gives the lease back to the fleet. It is idempotent, and does
// nothing for the zero Lease or a lease that holds nothing. When Redis
// cannot be reached the lease expires on its own a TTL later.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return
	}
	l.released = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	if l.s == nil {
		return
	}
	if l.local {
		<-l.s.fb.slots
		return
	}
	l.s.run(context.Background(), "release", releaseScript, l.s.leases, l.s.leaseArgs(l.id)...)
}

func newLeaseID() string {
	var b [12]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand panics rather)
	return hex.EncodeToString(b[:])
}

// LeaseTransport is an http.RoundTripper that holds one of the fleet's
// leases (Store.AcquireLease) for every request, from before the request
// is handed to next until its response body is closed, read to the end or
// fails. Put it outside the budget's transport:
//
//	rt := redisstore.NewLeaseTransport(core.NewTransport(nil, budget), store)
//
// so a request waits for a lease, then for the budget's slot, pause and
// turn.
type LeaseTransport struct {
	next http.RoundTripper
	s    *Store
}

var _ http.RoundTripper = (*LeaseTransport)(nil)

// NewLeaseTransport returns a LeaseTransport over next (nil means
// http.DefaultTransport) taking its leases from s.
func NewLeaseTransport(next http.RoundTripper, s *Store) *LeaseTransport {
	if next == nil {
		next = http.DefaultTransport
	}
	return &LeaseTransport{next: next, s: s}
}

// RoundTrip takes a lease, sends req through next and wraps the response
// body so the lease is released when the body is done. If no lease can be
// had (the request's context ends, or Redis fails and the store fails
// closed) it closes req.Body and returns the error.
func (t *LeaseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	l, err := t.s.AcquireLease(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		l.Release()
		return nil, err
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		l.Release()
		return resp, nil
	}
	resp.Body = &leaseBody{ReadCloser: resp.Body, l: l}
	return resp, nil
}

// CloseIdleConnections forwards to next when it has the method.
func (t *LeaseTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// leaseBody releases its lease on Close, at EOF and on a read error.
type leaseBody struct {
	io.ReadCloser
	l *Lease
}

func (b *leaseBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.l.Release()
	}
	return n, err
}

func (b *leaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.l.Release()
	return err
}
