package core

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// TestTransportProfileReadsBodyPrefix sends a GitHub secondary-limit refusal
// (a 403 with quota left; only the body says so) from a real server through
// a Transport whose budget has ratelimit.GitHub, and checks what the caller
// relies on: the budget pauses (capped at WithMaxPause), the caller reads
// the body exactly as sent, and the slot is held until the body is done.
func TestTransportProfileReadsBodyPrefix(t *testing.T) {
	long := `{"message":"You have exceeded a secondary rate limit.","pad":"` + strings.Repeat("p", 4000) + `"}`
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Remaining", "4000")
		w.WriteHeader(http.StatusForbidden)
		if r.URL.Path == "/short" {
			io.WriteString(w, `{"message":"secondary rate limit"}`)
			return
		}
		io.WriteString(w, long)
	})
	for _, tt := range []struct {
		path string
		want string
	}{{"/long", long}, {"/short", `{"message":"secondary rate limit"}`}} {
		b := MustBudget(PerSecond(1000), WithMaxInFlight(2), WithProfile(ratelimit.GitHub), WithMaxPause(30*time.Second))
		c := &http.Client{Transport: NewTransport(nil, b)}
		resp, err := c.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if p := b.PauseRemaining(); p <= 0 || p > 30*time.Second {
			t.Errorf("%s: PauseRemaining = %v, want a pause capped at 30s", tt.path, p)
		}
		if n := b.InFlight(); n != 1 {
			t.Errorf("%s: open body: InFlight = %d, want 1 (the slot is held until the body is done)", tt.path, n)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: body = %d bytes, %v; want the %d bytes sent", tt.path, len(got), err, len(tt.want))
		}
		assertNoSlots(t, b)
		resp.Body.Close()
	}
}

// TestTransportProfileNeverWaitsForAStream checks that a profile never reads
// a Server-Sent Events body: the server sends its second event only once
// the caller has read the first, which a transport that waited for a body
// prefix would never let happen (its read would end at the context's
// deadline, and the body with it).
func TestTransportProfileNeverWaitsForAStream(t *testing.T) {
	gotFirst := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusTooManyRequests) // a status whose body ratelimit.OpenAI reads
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-gotFirst:
			io.WriteString(w, "data: two\n\n")
		case <-r.Context().Done():
		}
	})
	b := MustBudget(PerSecond(1000), WithProfile(ratelimit.OpenAI))
	c := &http.Client{Transport: NewTransport(nil, b)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len("data: one\n\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "data: one\n\n" {
		t.Fatalf("first event = %q, %v", buf, err)
	}
	close(gotFirst)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: two\n\n" {
		t.Errorf("rest of the stream = %q, %v; want the second event: the transport waited for the body", rest, err)
	}
}

// TestTransportProfileBodyReadError checks that a body that fails while the
// prefix is read still reaches the caller whole: the bytes read, then the
// error; and the slot is freed by that error.
func TestTransportProfileBodyReadError(t *testing.T) {
	boom := errors.New("boom")
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: http.StatusForbidden,
			Header:     http.Header{"Content-Type": {"application/json"}},
			Body:       io.NopCloser(io.MultiReader(strings.NewReader(`{"message":"secondary rate limit`), errReader{boom})),
			Request:    r,
		}, nil
	})
	b := MustBudget(PerSecond(1000), WithMaxInFlight(1), WithProfile(ratelimit.GitHub))
	resp, err := NewTransport(next, b).RoundTrip(httpRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if string(got) != `{"message":"secondary rate limit` || !errors.Is(err, boom) {
		t.Errorf("ReadAll = %q, %v; want the bytes read, then boom", got, err)
	}
	assertNoSlots(t, b)
	if b.PauseRemaining() <= 0 {
		t.Errorf("the prefix read before the error was not read by the profile")
	}
	resp.Body.Close()
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func httpRequest(t *testing.T) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestBudgetObserveUsesProfile checks that a budget's profile reads the
// headers given to Observe as well: a quota under header names of the API's
// own, which the generic reader does not see, spent, holds the next call.
func TestBudgetObserveUsesProfile(t *testing.T) {
	acme, err := ratelimit.NewProfile(ratelimit.Spec{Name: "acme", Quotas: []ratelimit.QuotaSpec{{
		Limit: "Acme-Quota-Limit", Remaining: "Acme-Quota-Left",
		Reset: "Acme-Quota-Reset", ResetEncoding: ratelimit.EncodingSeconds,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	h := fbHeader("Acme-Quota-Limit", "10", "Acme-Quota-Left", "0", "Acme-Quota-Reset", "5")
	plain := MustBudget(PerSecond(10))
	if fb := plain.Observe(http.StatusOK, h, time.Time{}); fb.Remaining != -1 || plain.PauseRemaining() != 0 {
		t.Fatalf("without a profile: %+v, pause %v; want nothing read", fb, plain.PauseRemaining())
	}
	prof := MustBudget(PerSecond(10), WithProfile(acme))
	fb := prof.Observe(http.StatusOK, h, time.Time{})
	if fb.Remaining != 0 || fb.Limit != 10 || fb.Reset != 5*time.Second {
		t.Errorf("with the profile: %+v; want the quota spent (0 of 10, reset 5s)", fb)
	}
	if _, err := prof.TryAcquire(context.Background()); err == nil {
		t.Error("with the profile: a call went at once; want it held until the quota's reset")
	}
}
