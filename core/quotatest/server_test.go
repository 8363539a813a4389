package quotatest_test

// Real loopback: a real server and a real net/http client. These tests measure with
// generous bounds and never assert exact durations.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

func newServer(t *testing.T, cfg quotatest.Config) *quotatest.Server {
	t.Helper()
	s, err := quotatest.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer(%+v): %v", cfg, err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestNewServerRejectsInvalidConfig(t *testing.T) {
	if s, err := quotatest.NewServer(quotatest.Config{Period: time.Second}); err == nil || s != nil {
		t.Errorf("NewServer without Requests = %v, %v; want nil and an error", s, err)
	}
}

func TestServerLimits(t *testing.T) {
	s := newServer(t, quotatest.Config{Requests: 2, Period: time.Hour})
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Errorf("URL = %q, want loopback", s.URL)
	}
	var statuses []int
	for range 3 {
		statuses = append(statuses, fetch(t, s.Client(), http.MethodGet, s.URL+"/v1/items").status)
	}
	if fmt.Sprint(statuses) != "[200 200 429]" || s.Count() != 3 {
		t.Errorf("statuses %v, Count() %d; want [200 200 429], 3", statuses, s.Count())
	}
}

func TestServerLatency(t *testing.T) {
	s := newServer(t, quotatest.Config{Requests: 100, Period: time.Second})
	s.SetLatency(150 * time.Millisecond)
	start := time.Now()
	fetch(t, s.Client(), http.MethodGet, s.URL)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("response after %v, want at least the 150ms latency", d)
	}
}

func TestServerSlowBody(t *testing.T) {
	s := newServer(t, quotatest.Config{Requests: 100, Period: time.Second, Body: []byte("abcdefgh")})
	s.SetSlowBody(2, 50*time.Millisecond) // 4 chunks: at least 200ms of body
	start := time.Now()
	resp, err := s.Client().Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	head := time.Since(start)
	got, err := io.ReadAll(resp.Body)
	all := time.Since(start)
	if err != nil || string(got) != "abcdefgh" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	// Only a lower bound on the wall clock: a loaded machine can read the
	// head late, after most of the body has arrived. That the body streams
	// after the head is checked exactly in virtual time:
	// TestTransportSlowBodyStreams.
	if all < 200*time.Millisecond {
		t.Errorf("head after %v, body after %v; want the body to take at least 200ms", head, all)
	}
}

func TestServerTruncatedBody(t *testing.T) {
	s := newServer(t, quotatest.Config{Requests: 100, Period: time.Second, BodySize: 100})
	s.SetTruncatedBody(true)
	resp, err := s.Client().Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 50 || resp.ContentLength != 100 {
		t.Errorf("ReadAll: %d bytes, %v, ContentLength %d; want 50 bytes, io.ErrUnexpectedEOF, 100", len(got), err, resp.ContentLength)
	}
	s.SetTruncatedBody(false)
	if r := fetch(t, s.Client(), http.MethodGet, s.URL); len(r.body) != 100 {
		t.Errorf("after SetTruncatedBody(false): %d bytes", len(r.body))
	}
}

func TestServerConnectionReset(t *testing.T) {
	s := newServer(t, quotatest.Config{Requests: 100, Period: time.Second})
	s.ResetConnections(1)
	// A fresh connection, so net/http's Transport does not retry the request on its own.
	resp, err := s.Client().Get(s.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got %s, want a transport error", resp.Status)
	}
	if runtime.GOOS == "linux" && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("error %v, want connection reset by peer", err)
	}
	fetch(t, s.Client(), http.MethodGet, s.URL)
	var outcomes []quotatest.Outcome
	for _, a := range s.Arrivals() {
		outcomes = append(outcomes, a.Outcome)
	}
	if fmt.Sprint(outcomes) != "[ConnectionReset Admitted]" {
		t.Errorf("outcomes %v, want [ConnectionReset Admitted]", outcomes)
	}
}

// TestServerInFlightEndsFirst checks that a request leaves the in-flight count before its
// client can see the response end, so that a client sending one request at a time is seen
// with one in flight, even with bodies larger than the server's write buffer.
func TestServerInFlightEndsFirst(t *testing.T) {
	s := newServer(t, quotatest.Config{Requests: 100, Period: time.Hour, BodySize: 64 << 10})
	// A new connection each time: on one kept-alive connection, HTTP/1.1 itself would
	// serialise a request behind the end of the previous handler.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 120 { // 100 admitted (60 of them slow), 20 refused
		if i == 40 {
			s.SetSlowBody(16<<10, time.Microsecond)
		}
		fetch(t, c, http.MethodGet, s.URL)
		if n := s.PeakInFlight(); n != 1 {
			t.Fatalf("request %d: PeakInFlight() = %d, want 1", i, n)
		}
	}
}

// hammer sends n requests from each of g goroutines while faults change and the record is
// read, and returns how many 200s and 429s the clients saw.
func hammer(t *testing.T, p *quotatest.Provider, c *http.Client, url string, g, n int) (ok, refused int) {
	t.Helper()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	for range g {
		wg.Go(func() {
			for range n {
				resp, err := c.Get(url)
				if err != nil {
					continue // a reset connection
				}
				io.Copy(io.Discard, resp.Body) // a truncated body errors here
				resp.Body.Close()
				mu.Lock()
				switch resp.StatusCode {
				case 200:
					ok++
				case 429:
					refused++
				}
				mu.Unlock()
			}
		})
	}
	// Faults change and the record is read concurrently with the requests, each reader in a
	// goroutine of its own so that no lock taken by another call hides a missing one.
	var side sync.WaitGroup
	loop := func(f func(i int)) {
		side.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f(i)
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	loop(func(i int) {
		p.SetLatency(time.Duration(i%3) * time.Millisecond)
		p.SetSlowBody(i%2*4, time.Millisecond)
		p.SetTruncatedBody(i%5 == 0)
		p.ResetConnections(i % 2)
		if i%7 == 0 {
			p.PauseFor(2 * time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	})
	loop(func(int) { _ = p.Arrivals() })
	loop(func(int) { _ = p.Count() })
	loop(func(int) { _ = p.Admitted() })
	loop(func(int) { _ = p.Refused() })
	loop(func(int) { _ = p.InFlight() })
	loop(func(int) { _ = p.PeakInFlight() })
	loop(func(int) { _ = p.PauseRemaining() })
	loop(func(int) { _ = p.CheckPacing(1, time.Millisecond, 0) })
	loop(func(int) { _ = p.String() })
	wg.Wait()
	close(stop)
	side.Wait()
	p.ClearFaults()
	return ok, refused
}

// checkTally checks the record against what the clients saw once everything has finished.
func checkTally(t *testing.T, p *quotatest.Provider, ok, refused, g int) {
	t.Helper()
	resets := 0
	for _, a := range p.Arrivals() {
		if a.Outcome == quotatest.ConnectionReset {
			resets++
		}
	}
	t.Logf("%d admitted, %d refused, %d resets, peak in flight %d", ok, refused, resets, p.PeakInFlight())
	if p.Admitted() != ok || p.Refused() != refused || p.Count() != ok+refused+resets {
		t.Errorf("Admitted %d, Refused %d, Count %d (resets %d); clients saw %d admitted, %d refused",
			p.Admitted(), p.Refused(), p.Count(), resets, ok, refused)
	}
	if p.InFlight() != 0 || p.PeakInFlight() > g || p.PeakInFlight() < 1 {
		t.Errorf("InFlight %d, PeakInFlight %d; want 0 and between 1 and %d", p.InFlight(), p.PeakInFlight(), g)
	}
	if ok == 0 || refused == 0 {
		t.Errorf("clients saw %d admitted and %d refused: the test did not exercise both", ok, refused)
	}
}

func TestServerConcurrentSafe(t *testing.T) {
	s := newServer(t, quotatest.Config{Requests: 200, Period: time.Second, BodySize: 64, MaxConcurrent: 6,
		Headers: quotatest.IETF | quotatest.RetryAfterSeconds})
	ok, refused := hammer(t, s.Provider, s.Client(), s.URL, 8, 40)
	// Server-side handlers may still be finishing after a client saw an error.
	deadline := time.Now().Add(5 * time.Second)
	for s.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	checkTally(t, s.Provider, ok, refused, 8)
}

func TestProviderConcurrentSafe(t *testing.T) {
	p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 200, Period: time.Second, BodySize: 64, MaxConcurrent: 6,
		Algorithm: quotatest.FixedWindow, Headers: quotatest.XRateLimitEpoch | quotatest.RetryAfterMillis})
	ok, refused := hammer(t, p, p.Client(), api, 8, 40)
	deadline := time.Now().Add(5 * time.Second)
	for p.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	checkTally(t, p, ok, refused, 8)
}
