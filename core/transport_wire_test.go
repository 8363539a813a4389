package core

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sort"
	"sync"
	"testing"
	"time"
)

// resettingServer serves the first request of every connection and resets
// (RST, after reading it) every later request on the same connection: a
// reused keep-alive connection fails, and net/http silently re-sends a
// replayable request on a new one. It records every request's arrival.
type resettingServer struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
}

type connSeenKey struct{}

func newResettingServer(t *testing.T) *resettingServer {
	t.Helper()
	rs := &resettingServer{}
	rs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.arrivals = append(rs.arrivals, time.Now())
		rs.mu.Unlock()
		seen := r.Context().Value(connSeenKey{}).(*int)
		if *seen++; *seen == 1 {
			io.WriteString(w, "ok")
			return
		}
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
		c.Close()
	}))
	rs.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connSeenKey{}, new(int))
	}
	rs.Start()
	t.Cleanup(rs.Close)
	return rs
}

func (rs *resettingServer) arrived() []time.Time {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]time.Time(nil), rs.arrivals...)
}

// TestTransportWireAttemptsKeepTheBound drives calls through a real
// http.Client whose reused connections the server resets, so net/http
// re-sends each call, and checks at the server that every attempt took its
// own turn: with burst 1 the k-th turn comes at least k intervals after
// the first call began, and an attempt arrives after its turn. Only this
// lower bound is checked on the wall clock, as a loaded machine can delay
// arrivals but never make them early; a re-send without a turn would
// arrive right after the attempt it repeats.
func TestTransportWireAttemptsKeepTheBound(t *testing.T) {
	const calls, burst = 5, 1
	interval := 100 * time.Millisecond
	rs := newResettingServer(t)
	b := MustBudget(Rate{Requests: 1, Period: interval}, WithBurst(burst), WithoutAdaptive())
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	c := &http.Client{Transport: NewTransport(base, b)}
	start := time.Now()
	for i := range calls {
		resp, err := c.Get(rs.URL)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	a := rs.arrived()
	if len(a) != 2*calls-1 {
		t.Fatalf("%d arrivals at the server, want %d (every call after the first re-sent once)", len(a), 2*calls-1)
	}
	sort.Slice(a, func(i, j int) bool { return a[i].Before(a[j]) })
	for k, at := range a {
		if earliest := start.Add(time.Duration(k) * interval); at.Before(earliest) {
			t.Fatalf("arrival %d came %v after the first call began, before its turn (%v): an attempt went without a turn",
				k, at.Sub(start), earliest.Sub(start))
		}
	}
}

// TestTransportWireReattemptPastDeadlineIsNotSent checks that a re-attempt
// whose turn cannot come before the request's deadline is not sent: the
// call fails with the budget's error and the server never sees it. A
// trace the caller set still sees every attempt.
func TestTransportWireReattemptPastDeadlineIsNotSent(t *testing.T) {
	rs := newResettingServer(t)
	// Two turns at once, the third a minute away: no stall of the machine
	// brings it inside the deadline, and no call waits for a turn.
	b := MustBudget(Rate{Requests: 1, Period: time.Minute}, WithBurst(2), WithoutAdaptive())
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	c := &http.Client{Transport: NewTransport(base, b)}
	resp, err := c.Get(rs.URL) // a fresh connection: served, then kept idle
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var getConns, gotConns int
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { getConns++ },
		GotConn: func(httptrace.GotConnInfo) { gotConns++ },
	})
	req, _ := http.NewRequestWithContext(ctx, "GET", rs.URL, nil)
	resp, err = c.Do(req) // reused connection reset; the re-send has no turn before the deadline
	if err == nil {
		resp.Body.Close()
		t.Fatal("the call succeeded; want the budget's error for the re-attempt")
	}
	if !IsBudgetError(err) {
		t.Errorf("the call failed with %v, want a budget error", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the re-attempt's error %v does not match context.DeadlineExceeded, as Acquire's does", err)
	}
	if n := len(rs.arrived()); n != 2 {
		t.Errorf("%d arrivals at the server, want 2 (the re-attempt without a turn was sent)", n)
	}
	if getConns < 2 || gotConns < 2 {
		t.Errorf("the caller's trace saw %d GetConn and %d GotConn, want every attempt (at least 2 each)", getConns, gotConns)
	}
}
