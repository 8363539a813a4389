package core

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// traceKey is the type of the key net/http/httptrace keeps a request's
// ClientTrace under, found by asking a context that notes what it is asked.
var traceKey = func() reflect.Type {
	var c keyNoting
	httptrace.ContextClientTrace(&c)
	return c.asked
}()

type keyNoting struct {
	context.Context
	asked reflect.Type
}

func (c *keyNoting) Value(key any) any { c.asked = reflect.TypeOf(key); return nil }

// wireCtx is a request context that runs atWire once, when the request's
// client trace is first looked up: Transport.RoundTrip does that after the
// call's turn was given (withWireTurns) and before the request goes to the
// next RoundTripper — the gap in which, over loopback, another goroutine's
// refusal is applied while this one waits for a CPU.
type wireCtx struct {
	context.Context
	once   sync.Once
	atWire func()
}

func (c *wireCtx) Value(key any) any {
	if reflect.TypeOf(key) == traceKey {
		c.once.Do(c.atWire)
	}
	return c.Context.Value(key)
}

// sendLog is a next RoundTripper that answers 200 and notes each request's
// path and when it was sent, from start.
type sendLog struct {
	mu    sync.Mutex
	start time.Time
	paths []string
	at    []time.Duration
}

func (l *sendLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.paths, l.at = append(l.paths, r.URL.Path), append(l.at, time.Since(l.start))
	l.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
}

func get(t *testing.T, tr *Transport, ctx context.Context, path string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// A request granted its turn, whose goroutine reaches the wire 1 ms later
// — after a refusal applied meanwhile paused the budget for 2 s — is not
// sent into the pause: it waits for the pause's end and goes first then,
// ahead of the callers who queued during the pause. (Without the last look
// it went at 1 ms, into the pause: over loopback, 1-8 requests of a
// window's burst, granted 0.4-0.6 ms before the refusal was applied and
// sent 20-40 µs after.)
func TestLastLookHoldsForAPauseKnownSinceTheGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithBurst(1))
		log := &sendLog{start: time.Now()}
		tr := NewTransport(log, b)
		var wg sync.WaitGroup
		ctx := &wireCtx{Context: context.Background(), atWire: func() {
			time.Sleep(ms) // granted at 0, at the wire at 1 ms
			b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}, time.Time{})
			for _, p := range []string{"/a", "/b", "/c"} { // callers who queue during the pause
				wg.Go(func() {
					if err := get(t, tr, context.Background(), p); err != nil {
						t.Error(err)
					}
				})
			}
			synctest.Wait() // they are queued
		}}
		if err := get(t, tr, ctx, "/granted"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if len(log.paths) != 4 || log.paths[0] != "/granted" || log.at[0] != 2*time.Second+ms {
			t.Fatalf("sent %v at %v; want /granted first, at the pause's end (2.001s), then the others", log.paths, log.at)
		}
		for i := 1; i < 4; i++ {
			if log.at[i] < log.at[0] {
				t.Errorf("%s sent at %v, before the pause's end", log.paths[i], log.at[i])
			}
		}
	})
}

// One whose deadline comes before the pause ends fails at once with a
// *RateLimitError, sends nothing and holds nothing; one whose pause ended
// before it reached the wire goes at once.
func TestLastLookDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithBurst(1), WithMaxInFlight(2))
		log := &sendLog{start: time.Now()}
		tr := NewTransport(log, b)
		deadline, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ctx := &wireCtx{Context: deadline, atWire: func() {
			time.Sleep(ms)
			b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}, time.Time{})
		}}
		err := get(t, tr, ctx, "/late")
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.Reason != Paused || time.Since(log.start) != ms {
			t.Errorf("after %v: %v; want a RateLimitError (Paused) at once, at 1ms", time.Since(log.start), err)
		}
		if len(log.paths) != 0 || b.InFlight() != 0 {
			t.Errorf("sent %v, %d slots held; want nothing sent, no slot held", log.paths, b.InFlight())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithBurst(1))
		log := &sendLog{start: time.Now()}
		tr := NewTransport(log, b)
		ctx := &wireCtx{Context: context.Background(), atWire: func() {
			b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}, time.Time{})
			time.Sleep(time.Second) // the pause is over before the request reaches the wire
		}}
		if err := get(t, tr, ctx, "/ok"); err != nil || len(log.at) != 1 || log.at[0] != time.Second {
			t.Errorf("sent at %v, %v; want it sent at once, at 1s", log.at, err)
		}
	})
}
