package core

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// fbT0 is the fixed wall-clock instant the feedback tests read headers at.
var fbT0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fbHeader builds a header from name, value pairs with Header.Add, so repeated
// names keep their order and names are canonicalized as net/http would.
func fbHeader(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// TestParseFeedbackCap checks that the budget's reading caps every pause,
// whatever its source and profile, while ratelimit.Parse reports what the
// server said (issue 17: the parser reports, the budget caps).
func TestParseFeedbackCap(t *testing.T) {
	huge := fbHeader("Retry-After", "86400")
	tests := []struct {
		name     string
		status   int
		h        http.Header
		maxPause time.Duration
		want     time.Duration
	}{
		{"default-cap", 429, huge, 0, DefaultMaxPause},
		{"negative-cap-is-default", 429, huge, -time.Second, DefaultMaxPause},
		{"budget-cap", 429, huge, 10 * time.Second, 10 * time.Second},
		{"budget-cap-above-default", 429, huge, 48 * time.Hour, 24 * time.Hour},
		{"under-cap", 429, fbHeader("Retry-After", "3"), 10 * time.Second, 3 * time.Second},
		{"saturated-retry-after", 429, fbHeader("Retry-After", strings.Repeat("9", 400)), 0, DefaultMaxPause},
		{"ietf", 200, fbHeader("RateLimit", `a;r=0;t=999999999999999`), 0, DefaultMaxPause},
		{"unix-far-future", 200, fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "99999999999"), time.Minute, time.Minute},
		{"unix-ms-saturated", 200, fbHeader("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strings.Repeat("9", 40)), 0, DefaultMaxPause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseFeedback(tt.status, tt.h, fbT0, tt.maxPause).Pause; got != tt.want {
				t.Errorf("parseFeedback(%d, %v, fbT0, %v).Pause = %v, want %v", tt.status, tt.h, tt.maxPause, got, tt.want)
			}
		})
	}

	// A pause only a profile reads (Discord's retry_after in the body) is
	// capped too.
	h := fbHeader("Content-Type", "application/json")
	body := []byte(`{"retry_after": 86400, "global": false}`)
	if got := ratelimit.Discord.Parse(429, h, body, fbT0).Pause; got != 24*time.Hour {
		t.Fatalf("ratelimit.Discord.Parse(429, …).Pause = %v, want 24h (uncapped)", got)
	}
	if got := readFeedback(429, h, body, fbT0, time.Minute, ratelimit.Discord).Pause; got != time.Minute {
		t.Errorf("readFeedback(429, …, 1m, Discord).Pause = %v, want 1m", got)
	}
}

// TestTransportUserProfile sends, from a real server, a refusal only a
// user-written profile reads (a 400 whose JSON body names the wait in
// milliseconds) through a Transport whose budget has that profile: the
// budget pauses for the wait the body names, capped at WithMaxPause, and the
// caller reads the body as sent.
func TestTransportUserProfile(t *testing.T) {
	p, err := ratelimit.NewProfile(ratelimit.Spec{Name: "acme", Signals: []ratelimit.Signal{{
		Statuses: []int{http.StatusBadRequest}, Field: "code", Values: []string{"slow_down"},
		Wait: "retry_in_ms", WaitEncoding: ratelimit.EncodingMilliseconds,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"code":"slow_down","retry_in_ms":20000}`
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, body)
	})
	for _, tt := range []struct {
		profile ratelimit.Profile
		paused  bool
	}{{p, true}, {ratelimit.NoProfile, false}} {
		b := MustBudget(PerSecond(1000), WithProfile(tt.profile), WithMaxPause(30*time.Second))
		c := &http.Client{Transport: NewTransport(nil, b)}
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != body {
			t.Errorf("%v: body = %q, %v; want it as sent", tt.profile, got, err)
		}
		if pause := b.PauseRemaining(); (pause > 15*time.Second && pause <= 20*time.Second) != tt.paused {
			t.Errorf("%v: PauseRemaining = %v, want a pause of about 20s: %v", tt.profile, pause, tt.paused)
		}
	}
}
