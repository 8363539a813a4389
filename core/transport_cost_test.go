package core

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestTransportCostCommitAndDefaults sends requests that carry a tokens
// estimate through a Transport and checks when the next one may go after
// each way of settling: Commit, a 2xx closed without Commit, an error
// status closed without Commit, and a transport error.
func TestTransportCostCommitAndDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100 tokens a second, burst 100: 100 tokens take a second to return.
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)))
		status, fail := http.StatusOK, false
		next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if fail {
				return nil, errors.New("connection refused")
			}
			return &http.Response{StatusCode: status, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(`{"usage":{"total_tokens":30}}`)), Request: r}, nil
		})
		c := &http.Client{Transport: NewTransport(next, b)}
		start := time.Now()
		send := func(step int, want time.Duration) *http.Response {
			t.Helper()
			ctx := WithCost(context.Background(), Cost{"tokens", 100})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/", nil)
			resp, err := c.Do(req)
			if got := time.Since(start); got != want {
				t.Fatalf("step %d: sent at %v, want %v", step, got, want)
			}
			if err != nil {
				return nil
			}
			return resp
		}
		resp := send(1, 0)
		io.ReadAll(resp.Body) // the end of the body does not settle: Commit still can
		if !Commit(resp, Cost{"tokens", 30}) {
			t.Fatal("step 1: Commit = false, want true")
		}
		if Commit(resp, Cost{"tokens", 0}) {
			t.Fatal("step 1: second Commit = true, want false")
		}
		resp.Body.Close()
		// 70 came back at once; 30 more take 0.3 s.
		resp = send(2, 300*time.Millisecond)
		resp.Body.Close() // a 2xx without Commit keeps its estimate
		resp = send(3, 1300*time.Millisecond)
		resp.Body.Close()
		status = http.StatusInternalServerError
		resp = send(4, 2300*time.Millisecond)
		resp.Body.Close() // a 500 gives its estimate back
		fail = true
		send(5, 2300*time.Millisecond) // a transport error gives it back too
		fail = false
		resp = send(6, 2300*time.Millisecond)
		resp.Body.Close()
	})
}

// wrapBodyTransport stands for a body-wrapping transport above headgate's
// (otelhttp): it replaces every response body with its own type.
type wrapBodyTransport struct{ next http.RoundTripper }

type wrappedBody struct{ io.ReadCloser }

func (w wrapBodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(r)
	if err == nil {
		resp.Body = wrappedBody{resp.Body}
	}
	return resp, err
}

// tokenSteps runs a script of requests, each with a tokens estimate of 100,
// against a budget of 100 tokens a second (burst 100) and checks when each
// is sent. next answers every request with status().
type tokenSteps struct {
	t      *testing.T
	b      *Budget
	c      *http.Client
	start  time.Time
	status func() int
	sent   int
}

func newTokenSteps(t *testing.T, wrap func(http.RoundTripper) *http.Client, opts ...TransportOption) *tokenSteps {
	s := &tokenSteps{t: t, status: func() int { return http.StatusOK }}
	s.b = MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)))
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		s.sent++
		return &http.Response{StatusCode: s.status(), Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"usage":{"total_tokens":30}}`)), Request: r}, nil
	})
	s.c = wrap(NewTransport(next, s.b, opts...))
	s.start = time.Now()
	return s
}

// send sends a request under ctx and checks it was sent at want.
func (s *tokenSteps) send(step int, ctx context.Context, want time.Duration) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/v1/chat/completions", nil)
	resp, err := s.c.Do(req)
	if err != nil {
		s.t.Fatalf("step %d: %v", step, err)
	}
	if got := time.Since(s.start); got != want {
		s.t.Fatalf("step %d: sent at %v, want %v", step, got, want)
	}
	return resp
}

func tokens(n int64) Cost { return Cost{"tokens", n} }

// TestCommitFindsCostBehindWrappers commits through responses whose bodies
// are not the Transport's: behind http.Client.Timeout (net/http wraps the
// body in its timer body) and under a body-wrapping transport above. The
// 70 tokens given back must let the next request go 0.7 s early.
func TestCommitFindsCostBehindWrappers(t *testing.T) {
	clients := map[string]func(http.RoundTripper) *http.Client{
		"Client.Timeout": func(rt http.RoundTripper) *http.Client {
			return &http.Client{Transport: rt, Timeout: time.Hour}
		},
		"wrapping transport": func(rt http.RoundTripper) *http.Client {
			return &http.Client{Transport: wrapBodyTransport{rt}}
		},
	}
	for name, wrap := range clients {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newTokenSteps(t, wrap)
				resp := s.send(1, WithCost(context.Background(), tokens(100)), 0)
				io.ReadAll(resp.Body)
				if !Commit(resp, tokens(30)) {
					t.Fatal("step 1: Commit = false, want true")
				}
				resp.Body.Close()
				resp = s.send(2, WithCost(context.Background(), tokens(100)), 300*time.Millisecond)
				resp.Body.Close()
			})
		})
	}
}

// TestCommitmentAfterBodyClosed is the SDK's way: the body is read and
// closed before the caller learns the usage, and retried attempts share
// the call's context. The attempt refused with a 429 gives its estimate
// back when its body is closed; the Commitment settles the 2xx one.
func TestCommitmentAfterBodyClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTokenSteps(t, func(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt} })
		statuses := []int{http.StatusTooManyRequests, http.StatusOK}
		s.status = func() int { return statuses[(s.sent-1)%len(statuses)] }
		ctx, c := WithCommit(context.Background(), tokens(100))
		// An SDK's retry loop: the retry goes at the pace the refusal cut
		// (it reported no quota: 1000/s halved, 2ms), with the 100 tokens
		// the refused attempt gave back.
		const retry = 2 * time.Millisecond
		for attempt, at := range []time.Duration{0, retry} {
			resp := s.send(1+attempt, ctx, at)
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		s.status = func() int { return http.StatusOK }
		if Commit(&http.Response{}, tokens(1)) {
			t.Fatal("Commit of a response from elsewhere = true, want false")
		}
		if !c.Commit(tokens(30)) {
			t.Fatal("Commitment.Commit = false, want true")
		}
		if c.Commit(tokens(0)) {
			t.Fatal("second Commitment.Commit = true, want false")
		}
		// 100 − 30 came back: 30 used, the next 100 may go 0.3 s after it.
		ctx, c = WithCommit(context.Background(), tokens(100))
		resp := s.send(3, ctx, retry+300*time.Millisecond)
		resp.Body.Close()
		if !c.Commit(tokens(100)) {
			t.Fatal("step 3: Commitment.Commit = false, want true")
		}
		resp = s.send(4, WithCost(context.Background(), tokens(100)), retry+1300*time.Millisecond)
		resp.Body.Close()
	})
}

// TestCommitmentSupersededAttemptKeepsEstimate: when two attempts under one
// Commitment both got a 2xx, the earlier keeps its estimate and Commit
// settles the later. (The second waits for the first's tokens, so giving
// the first's back would free nothing: the later reservation relied on it.)
func TestCommitmentSupersededAttemptKeepsEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTokenSteps(t, func(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt} })
		ctx, c := WithCommit(context.Background(), tokens(100))
		s.send(1, ctx, 0).Body.Close()
		s.send(2, ctx, time.Second).Body.Close()
		if !c.Commit(tokens(0)) { // the second's 100 come back
			t.Fatal("Commitment.Commit = false, want true")
		}
		s.send(3, WithCost(context.Background(), tokens(100)), time.Second).Body.Close()
	})
}

// TestCommitmentDroppedSettles: a Commitment dropped without Commit keeps
// its 2xx attempt's estimate and, once the garbage collector finds it, is
// settled: nothing stays pending in the budget.
func TestCommitmentDroppedSettles(t *testing.T) {
	b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)))
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
	})
	c := &http.Client{Transport: NewTransport(next, b)}
	func() {
		ctx, _ := WithCommit(context.Background(), tokens(100))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}()
	pending := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.dims.pending.Head != nil
	}
	if !pending() {
		t.Fatal("the 2xx attempt was settled at Close; want it open for its Commitment")
	}
	for range 100 {
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on their own goroutine
		if !pending() {
			return
		}
	}
	t.Error("a dropped Commitment's attempt is still pending after 100 collections")
}

// TestCommitmentOutlivesLeakedBody: a 2xx body dropped without Close is
// freed by the collector (LeakedBody), but its cost stays open for the
// Commitment that is still held.
func TestCommitmentOutlivesLeakedBody(t *testing.T) {
	leaked := make(chan struct{}, 1)
	b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)), WithObserver(func(e Event) {
		if e.Reason == LeakedBody {
			leaked <- struct{}{}
		}
	}))
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
	})
	ctx, c := WithCommit(context.Background(), tokens(100))
	func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/", nil)
		if _, err := (&http.Client{Transport: NewTransport(next, b)}).Do(req); err != nil {
			t.Fatal(err)
		}
	}() // the response is dropped, its body neither read nor closed
	for i := 0; ; i++ {
		runtime.GC()
		select {
		case <-leaked:
		case <-time.After(time.Millisecond):
			if i < 100 {
				continue
			}
			t.Fatal("the dropped body was not collected after 100 collections")
		}
		break
	}
	if !c.Commit(tokens(30)) {
		t.Error("Commitment.Commit after the body leaked = false, want true")
	}
}
