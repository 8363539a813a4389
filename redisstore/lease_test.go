package redisstore

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

// TestLeasesCapTheFleetConcurrentSafe: two stores on one key (two
// processes) share a cap of 3 leases: many goroutines holding leases never
// hold more than 3 at once, and every lease comes back.
func TestLeasesCapTheFleetConcurrentSafe(t *testing.T) {
	a := newStore(t, WithMaxInFlight(3))
	b := otherProcess(t, a, WithMaxInFlight(3))
	var held, peak, total atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range 5 {
				l, err := s.AcquireLease(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				n := held.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				held.Add(-1)
				l.Release()
				l.Release() // idempotent
				total.Add(1)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak leases held at once = %d, want at most 3 (and the cap used)", p)
	}
	if total.Load() != 80 {
		t.Errorf("%d leases taken, want 80", total.Load())
	}
	if n := a.client.ZCard(context.Background(), a.leases[0]).Val(); n != 0 {
		t.Errorf("%d leases still held after every release", n)
	}
}

// TestLeaseWaitEndsWithContext: a caller waiting for a lease returns the
// context's error when it ends; with no cap, a lease is had at once.
func TestLeaseWaitEndsWithContext(t *testing.T) {
	s := newStore(t, WithMaxInFlight(1))
	l, err := s.AcquireLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.AcquireLease(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireLease past the cap = %v, want the context's deadline", err)
	}
	free := newStore(t)
	l2, err := free.AcquireLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l2.Release()
	var zero *Lease
	zero.Release()
}

// TestLeasesOfAKilledProcessComeBack: a process takes every lease and
// dies without releasing them. While it lives they are renewed (held past
// their TTL); once it is killed each expires at most a TTL after the kill
// (checked on the expiries Redis holds, on its clock) and the rest of the
// fleet gets them. The TTL is a second, renewed every third of it: only a
// helper stalled for two thirds of a second could lose a lease it holds.
func TestLeasesOfAKilledProcessComeBack(t *testing.T) {
	const max, ttl = 3, time.Second
	s := newStore(t, WithMaxInFlight(max), WithLeaseTTL(ttl))
	h := startHelper(t, "lease", map[string]string{
		"ADDR": testAddr, "KEY": s.Key(), "N": strconv.Itoa(max), "MAX": strconv.Itoa(max), "LEASE_TTL": ttl.String(),
	})
	if got := h.line(t); got != "ready\n" {
		t.Fatalf("helper said %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*ttl)
	_, err := s.AcquireLease(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("while the holder lives, AcquireLease = %v, want to wait past the lease TTL (leases renewed)", err)
	}
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait()
	bg := context.Background()
	now, err := s.client.Time(bg).Result()
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.client.ZRangeWithScores(bg, s.leases[0], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != max {
		t.Fatalf("%d leases in Redis after the holder died, want its %d", len(held), max)
	}
	for _, z := range held {
		if left := time.Duration(int64(z.Score)-now.UnixMilli()) * time.Millisecond; left > ttl {
			t.Errorf("a dead process's lease expires %v after its death, want at most the TTL %v", left, ttl)
		}
	}
	killed := time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 10*ttl) // a limit against a hang only
	defer cancel()
	for i := range max {
		l, err := s.AcquireLease(ctx)
		if err != nil {
			t.Fatalf("lease %d after the holder died: %v", i, err)
		}
		defer l.Release()
	}
	t.Logf("the dead process's %d leases came back %v after the kill (TTL %v)", max, time.Since(killed), ttl)
}

// TestLeaseTransportCapsOpenRequests: two clients (two processes) with a
// LeaseTransport over the budget's transport never have more than the
// fleet's cap open at the provider, the lease lasts until the body is
// closed, and every lease is returned.
func TestLeaseTransportCapsOpenRequests(t *testing.T) {
	srv, err := quotatest.NewServer(quotatest.Config{Requests: 1000, Period: time.Second, Latency: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	a := newStore(t, WithMaxInFlight(2))
	b := otherProcess(t, a, WithMaxInFlight(2))
	var budgets []*core.Budget
	var clients []*http.Client
	for _, s := range []*Store{a, b} {
		bud := core.MustBudget(core.PerSecond(1000), core.WithStore(s), core.WithMaxInFlight(5))
		budgets = append(budgets, bud)
		clients = append(clients, &http.Client{Transport: NewLeaseTransport(core.NewTransport(nil, bud), s)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a leaked lease fails, not hangs
	defer cancel()
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/items", nil)
			resp, err := clients[i%2].Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			if i%4 < 2 { // half read the body to its end, half just close it
				io.Copy(io.Discard, resp.Body)
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	if p := srv.PeakInFlight(); p > 2 {
		t.Errorf("peak requests open at the provider = %d, want at most the fleet's cap of 2", p)
	}
	if srv.Admitted() != 12 {
		t.Errorf("admitted %d, want 12", srv.Admitted())
	}
	if n := a.client.ZCard(context.Background(), a.leases[0]).Val(); n != 0 {
		t.Errorf("%d leases held after every body was closed", n)
	}
	for i, bud := range budgets {
		if n := bud.InFlight(); n != 0 {
			t.Errorf("budget %d: %d slots held after every body was closed", i, n)
		}
	}
	// A request whose context ends while it waits for a lease: the error
	// comes back, the request body is closed, nothing is held.
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := a.AcquireLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := a.AcquireLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	body := &closeRecorder{}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/items", body)
	if _, err := clients[0].Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("request without a lease = %v, want the context's deadline", err)
	}
	if !body.closed.Load() {
		t.Error("the request body was not closed")
	}
	l.Release()
	l2.Release()
	if n := budgets[0].InFlight(); n != 0 {
		t.Errorf("%d slots held after a request failed for want of a lease", n)
	}
}

type closeRecorder struct{ closed atomic.Bool }

func (c *closeRecorder) Read([]byte) (int, error) { return 0, io.EOF }
func (c *closeRecorder) Close() error             { c.closed.Store(true); return nil }
