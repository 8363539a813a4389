package core

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// roundTripFunc adapts a function to http.RoundTripper, for the paths a
// real transport cannot be made to take (a panic, a broken transport).
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// trackedBody records whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func capped() *Budget { return MustBudget(PerSecond(1000), WithMaxInFlight(4)) }

func assertNoSlots(t *testing.T, b *Budget) {
	t.Helper()
	if n := b.InFlight(); n != 0 {
		t.Fatalf("InFlight = %d after the request, want 0: a slot leaked", n)
	}
}

func TestTransportReleasesSlotOnEveryPath(t *testing.T) {
	body := strings.Repeat("x", 64<<10)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect/1":
			http.Redirect(w, r, "/redirect/2", http.StatusFound)
		case "/redirect/2":
			http.Redirect(w, r, "/body", http.StatusMovedPermanently)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			io.WriteString(w, body)
		}
	})
	cases := []struct {
		name string
		run  func(t *testing.T, c *http.Client, b *Budget)
	}{
		{"body closed without reading", func(t *testing.T, c *http.Client, b *Budget) {
			resp, err := c.Get(srv.URL + "/body")
			if err != nil {
				t.Fatal(err)
			}
			if b.InFlight() != 1 {
				t.Fatalf("open body: InFlight = %d, want 1 (the slot is held until Close)", b.InFlight())
			}
			resp.Body.Close()
		}},
		{"body read to EOF, never closed", func(t *testing.T, c *http.Client, b *Budget) {
			resp, err := c.Get(srv.URL + "/body")
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := io.Copy(io.Discard, resp.Body); n != int64(len(body)) {
				t.Fatalf("read %d bytes", n)
			}
		}},
		{"HEAD", func(t *testing.T, c *http.Client, b *Budget) {
			resp, err := c.Head(srv.URL + "/body")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Body != http.NoBody {
				t.Fatalf("HEAD body is %T, want http.NoBody passed through", resp.Body)
			}
		}},
		{"204 NoBody", func(t *testing.T, c *http.Client, b *Budget) {
			resp, err := c.Get(srv.URL + "/empty")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Body != http.NoBody {
				t.Fatalf("204 body is %T, want http.NoBody", resp.Body)
			}
		}},
		{"redirect chain", func(t *testing.T, c *http.Client, b *Budget) {
			resp, err := c.Get(srv.URL + "/redirect/1")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}},
		{"transport error", func(t *testing.T, c *http.Client, b *Budget) {
			_, err := c.Get("http://127.0.0.1:1/refused")
			if err == nil {
				t.Fatal("want a connection error")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := capped()
			c := &http.Client{Transport: NewTransport(nil, b)}
			tc.run(t, c, b)
			assertNoSlots(t, b)
		})
	}
}

func TestTransportRedirectHopsEachSpendATurn(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" {
			http.Redirect(w, r, "/b", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	})
	// Burst 1 at 1 req/100ms: the second hop waits one interval.
	b := MustBudget(Rate{1, 100 * time.Millisecond})
	c := &http.Client{Transport: NewTransport(nil, b)}
	start := time.Now()
	resp, err := c.Get(srv.URL + "/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("a 302 → 200 chain took %v: the second hop did not wait for its own turn", el)
	}
}

func TestTransportPanicInNextReleasesSlot(t *testing.T) {
	b := capped()
	tr := NewTransport(roundTripFunc(func(*http.Request) (*http.Response, error) { panic("boom") }), b)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was swallowed")
			}
		}()
		tr.RoundTrip(httptest.NewRequest("GET", "http://example.test/", nil))
	}()
	assertNoSlots(t, b)
}

func TestTransportBrokenNextReturningBothIsCleanedUp(t *testing.T) {
	b := capped()
	rb := &trackedBody{Reader: strings.NewReader("x")}
	tr := NewTransport(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: rb, Header: http.Header{}}, errors.New("broken")
	}), b)
	resp, err := tr.RoundTrip(httptest.NewRequest("GET", "http://example.test/", nil))
	if resp != nil || err == nil {
		t.Fatalf("RoundTrip = (%v, %v), want only the error", resp, err)
	}
	if !rb.closed.Load() {
		t.Fatal("the dropped response body was not closed")
	}
	assertNoSlots(t, b)
}

func TestTransportCancelledDuringWaitClosesRequestBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second}, WithMaxInFlight(2))
		sent := 0
		tr := NewTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent++
			return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
		}), b)
		tr.RoundTrip(httptest.NewRequest("GET", "http://example.test/", nil)) // spends the burst
		ctx, cancel := context.WithCancel(context.Background())
		rb := &trackedBody{Reader: strings.NewReader("payload")}
		req := httptest.NewRequest("POST", "http://example.test/", nil).WithContext(ctx)
		req.Body = rb
		errc := make(chan error)
		go func() { _, err := tr.RoundTrip(req); errc <- err }()
		time.Sleep(500 * time.Millisecond)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: err = %v", err)
		}
		if !rb.closed.Load() {
			t.Fatal("the request body was not closed on the early return")
		}
		if sent != 1 {
			t.Fatalf("%d requests sent, want 1 (the cancelled one never)", sent)
		}
		assertNoSlots(t, b)
	})
}

func TestTransportDeadlineFailFastClosesRequestBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(Rate{1, time.Second})
		tr := NewTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
		}), b)
		tr.RoundTrip(httptest.NewRequest("GET", "http://example.test/", nil))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		rb := &trackedBody{Reader: strings.NewReader("payload")}
		req := httptest.NewRequest("POST", "http://example.test/", nil).WithContext(ctx)
		req.Body = rb
		start := time.Now()
		_, err := tr.RoundTrip(req)
		if !IsBudgetError(err) || time.Since(start) != 0 {
			t.Fatalf("err = %v after %v, want a budget error at once", err, time.Since(start))
		}
		if !rb.closed.Load() {
			t.Fatal("request body not closed")
		}
	})
}

func TestTransportKeepsWriterOf101Body(t *testing.T) {
	b := capped()
	type rwc struct {
		io.Reader
		io.Writer
		io.Closer
	}
	tr := NewTransport(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 101, Header: http.Header{}, Body: rwc{strings.NewReader(""), io.Discard, io.NopCloser(nil)}}, nil
	}), b)
	resp, err := tr.RoundTrip(httptest.NewRequest("GET", "http://example.test/", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Body.(io.Writer); !ok {
		t.Fatalf("101 body %T lost its io.Writer", resp.Body)
	}
	resp.Body.Close()
	assertNoSlots(t, b)
}

func TestTransportLeakedBodyFreedByCollector(t *testing.T) {
	var leaked atomic.Int32
	b := MustBudget(PerSecond(1000), WithMaxInFlight(1), WithObserver(func(e Event) {
		if e.Reason == LeakedBody {
			leaked.Add(1)
		}
	}))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "never read") })
	c := &http.Client{Transport: NewTransport(nil, b)}
	func() {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.StatusCode // dropped without Close
	}()
	deadline := time.Now().Add(5 * time.Second)
	for b.InFlight() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	assertNoSlots(t, b)
	if leaked.Load() != 1 {
		t.Fatalf("LeakedBody events = %d, want 1", leaked.Load())
	}
}

func TestTransportForwardsCloseIdleConnections(t *testing.T) {
	var closed bool
	next := &idleCloser{RoundTripper: http.DefaultTransport, closed: &closed}
	NewTransport(next, capped()).CloseIdleConnections()
	if !closed {
		t.Fatal("CloseIdleConnections was not forwarded")
	}
}

type idleCloser struct {
	http.RoundTripper
	closed *bool
}

func (c *idleCloser) CloseIdleConnections() { *c.closed = true }

func TestTransportDoesNotModifyRequest(t *testing.T) {
	b := capped()
	tr := NewTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"1"}}, Body: http.NoBody}, nil
	}), b)
	req := httptest.NewRequest("GET", "http://user:pw@example.test/x?key=secret", nil)
	req.Header.Set("Authorization", "Bearer t")
	before := req.Clone(context.Background())
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("a 429 must come back as a response: (%v, %v)", resp, err)
	}
	if req.URL.String() != before.URL.String() || req.Header.Get("Authorization") != "Bearer t" || len(req.Header) != len(before.Header) {
		t.Fatal("the caller's request was modified")
	}
}

func TestTransportConcurrentSafe(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	b := MustBudget(Rate{100, 10 * time.Millisecond}, WithMaxInFlight(8))
	c := &http.Client{Transport: NewTransport(nil, b, WithLane("/lane", MustBudget(PerSecond(10000))))}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 20 {
				path := "/x"
				if (i+j)%3 == 0 {
					path = "/lane/y"
				}
				resp, err := c.Get(srv.URL + path)
				if err != nil {
					t.Error(err)
					return
				}
				if j%2 == 0 {
					io.Copy(io.Discard, resp.Body)
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	assertNoSlots(t, b)
}

// TestTransportObserverPanicClosesResponse checks that when the observer
// panics while the response is fed back, the panic reaches the caller, the
// slot is freed, and the response nobody will get is closed (its connection
// and net/http's goroutines are not left behind).
func TestTransportObserverPanicClosesResponse(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "slow down")
	})
	b := MustBudget(PerSecond(1000), WithMaxInFlight(1), WithObserver(func(e Event) {
		if e.Reason == Pushback {
			panic("observer bug")
		}
	}))
	var bodies []*closeTracker
	real := &http.Transport{}
	defer real.CloseIdleConnections()
	tr := NewTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := real.RoundTrip(r)
		if err == nil {
			tb := &closeTracker{ReadCloser: resp.Body}
			bodies = append(bodies, tb)
			resp.Body = tb
		}
		return resp, err
	}), b)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the observer's panic was swallowed")
			}
		}()
		tr.RoundTrip(httptest.NewRequest("GET", srv.URL, nil))
	}()
	if len(bodies) != 1 || !bodies[0].closed.Load() {
		t.Fatal("the response the panic kept from the caller was not closed")
	}
	assertNoSlots(t, b)
}

// closeTracker records whether a real body was closed, and closes it.
type closeTracker struct {
	io.ReadCloser
	closed atomic.Bool
}

func (b *closeTracker) Close() error { b.closed.Store(true); return b.ReadCloser.Close() }

// TestTransportLeakedBodyObserverPanicIsRecovered checks that an observer
// panicking on LeakedBody, which runs in the collector's cleanup with no
// caller, neither crashes the process nor keeps the slot: the panic is
// logged.
func TestTransportLeakedBodyObserverPanicIsRecovered(t *testing.T) {
	var logged strings.Builder
	var mu sync.Mutex
	log.SetOutput(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logged.Write(p) }))
	defer log.SetOutput(os.Stderr)
	b := MustBudget(PerSecond(1000), WithMaxInFlight(1), WithName("leaky"), WithObserver(func(e Event) {
		if e.Reason == LeakedBody {
			panic("observer bug")
		}
	}))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "never read") })
	c := &http.Client{Transport: NewTransport(nil, b)}
	func() {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.StatusCode // dropped without Close
	}()
	deadline := time.Now().Add(5 * time.Second)
	for b.InFlight() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	assertNoSlots(t, b)
	for time.Now().Before(deadline) {
		mu.Lock()
		out := logged.String()
		mu.Unlock()
		if strings.Contains(out, `budget "leaky": the observer panicked on LeakedBody: observer bug`) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the recovered panic was not logged; log = %q", logged.String())
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
