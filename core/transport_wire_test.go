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
// re-sends each call, and checks at the server that the arrivals obey the
// budget's bound: in every window W at most burst + floor(W/interval)
// arrivals. Arrival times at the server carry the loopback's delivery
// jitter, so each window is widened by a quarter interval.
func TestTransportWireAttemptsKeepTheBound(t *testing.T) {
	const calls, burst = 5, 1
	interval := 300 * time.Millisecond
	rs := newResettingServer(t)
	b := MustBudget(Rate{Requests: 1, Period: interval}, WithBurst(burst), WithoutAdaptive())
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	c := &http.Client{Transport: NewTransport(base, b)}
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
	jitter := interval / 4
	for i := range a {
		for j := i; j < len(a); j++ {
			w := a[j].Sub(a[i])
			if n, bound := j-i+1, burst+int((w+jitter)/interval); n > bound {
				t.Fatalf("%d arrivals within %v at the server, over the bound %d (burst %d + W/interval)", n, w, bound, burst)
			}
		}
	}
}

// TestTransportWireReattemptPastDeadlineIsNotSent checks that a re-attempt
// whose turn cannot come before the request's deadline is not sent: the
// call fails with the budget's error and the server never sees it. A
// trace the caller set still sees every attempt.
func TestTransportWireReattemptPastDeadlineIsNotSent(t *testing.T) {
	rs := newResettingServer(t)
	b := MustBudget(Rate{Requests: 1, Period: time.Second}, WithoutAdaptive())
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	c := &http.Client{Transport: NewTransport(base, b)}
	resp, err := c.Get(rs.URL) // a fresh connection: served, then kept idle
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	time.Sleep(time.Second) // the next turn has come; the one after is a second away

	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
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
