package matrix

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// TestMeasure checks the figures a cell reports from what the server saw:
// the refusals, the pause's known arrivals (after the first one it
// refused, not at the same instant), the refused call's retry from the
// pause's end, and the configured-rate check.
func TestMeasure(t *testing.T) {
	pauseAt := at(100)
	arrivals := []Arrival{
		{At: at(0), Call: 1, Status: 200},
		{At: at(100), Call: 2, Status: 429, Paused: true}, // found the pause
		{At: at(100), Call: 3, Status: 429, Paused: true}, // same instant: sent before anyone knew
		{At: at(150), Call: 4, Status: 429, Paused: true}, // into the known pause
		{At: at(200), Call: 5, Status: 503},               // a refusal of another kind
		{At: at(1105), Call: 3, Status: 200},              // call 3's retry: not the one that found it
		{At: at(1112), Call: 2, Status: 200},              // call 2's retry, 12 ms after the end
	}
	var r Result
	r.measure(arrivals, pauseAt, nil, time.Second, 100, 10, 0)
	if r.Sent != 7 || r.Refused != 4 || r.IntoKnown != 1 || !r.Paused || !r.Found || !r.RetrySeen || r.RetryDelay != 12*time.Millisecond || !r.KeptConfigured {
		t.Errorf("measure = sent %d refused %d into %d paused %v found %v retry %v %v kept configured %v; want 7 4 1 true true true 12ms true",
			r.Sent, r.Refused, r.IntoKnown, r.Paused, r.Found, r.RetrySeen, r.RetryDelay, r.KeptConfigured)
	}
	var unfound Result // paused, but nothing arrived in the pause
	unfound.measure([]Arrival{{At: at(0), Call: 1, Status: 200}}, at(10), nil, time.Second, 100, 10, 0)
	if !unfound.Paused || unfound.Found || unfound.RetrySeen {
		t.Errorf("a pause nobody met: paused %v found %v retry %v; want true false false", unfound.Paused, unfound.Found, unfound.RetrySeen)
	}

	// Faster than configured: 3 at once with a configured burst of 2.
	var fast Result
	fast.measure([]Arrival{{At: at(0)}, {At: at(0)}, {At: at(0)}}, time.Time{}, nil, 0, 10, 2, 0)
	if fast.KeptConfigured || fast.ConfiguredError == "" || fast.Paused || fast.ConfiguredSlack != 100*time.Millisecond {
		t.Errorf("3 at once, configured burst 2: kept configured %v (%q, kept at slack %v), paused %v; want false, an error, 100ms, false",
			fast.KeptConfigured, fast.ConfiguredError, fast.ConfiguredSlack, fast.Paused)
	}
	var bunched Result // 3 ms early, on a configured interval of 100 ms
	bunched.measure([]Arrival{{At: at(0)}, {At: at(97)}, {At: at(200)}}, time.Time{}, nil, 0, 10, 1, 5*time.Millisecond)
	if !bunched.KeptConfigured || bunched.ConfiguredSlack != 3*time.Millisecond {
		t.Errorf("3 ms early: kept configured %v at slack 5ms, kept at %v; want true, 3ms", bunched.KeptConfigured, bunched.ConfiguredSlack)
	}

	// An early retry, into the pause, counts as known and has a negative delay.
	var early Result
	early.measure([]Arrival{
		{At: at(0), Call: 1, Status: 429, Paused: true},
		{At: at(500), Call: 1, Status: 429, Paused: true},
	}, at(0), nil, time.Second, 100, 10, 0)
	if early.IntoKnown != 1 || !early.RetrySeen || early.RetryDelay != -500*time.Millisecond {
		t.Errorf("early retry: into %d, retry %v %v; want 1, true, -500ms", early.IntoKnown, early.RetrySeen, early.RetryDelay)
	}

	// The rest of a burst, sent before the client received the first
	// refusal but arriving after it, was sent before anyone knew; what was
	// sent after the client knew counts.
	seen := newClientSide(nil)
	us := func(n int) time.Time { return at(0).Add(time.Duration(n) * time.Microsecond) }
	seen.sends = map[int][]time.Time{1: {us(-30)}, 2: {us(-20)}, 3: {us(-10)}, 4: {us(55)}}
	seen.refusals = []time.Time{us(-500), us(50)} // the first before the pause
	var burst Result
	burst.measure([]Arrival{
		{At: us(0), Call: 1, Status: 429, Paused: true},
		{At: us(60), Call: 2, Status: 429, Paused: true}, // arrived after the client knew, sent before
		{At: us(70), Call: 3, Status: 429, Paused: true},
		{At: us(80), Call: 4, Status: 429, Paused: true}, // sent after: into the known pause
	}, at(0), seen, time.Second, 100, 10, 0)
	if burst.IntoKnown != 1 {
		t.Errorf("burst before the client knew: into %d, want 1", burst.IntoKnown)
	}

	// A headgate client's budget knows of the pause once it has applied a
	// refusal (its Pushback), not when the transport received it: what
	// went to the wire in between — turns granted before the pause, the
	// refusal's goroutine waiting for a CPU — was sent before the budget
	// could know; what went after counts. (A pushback before the receipt,
	// of a refusal before the pause, moves nothing.)
	seen.pushbacks = []time.Time{us(-400), us(70)}
	var applied Result
	applied.measure([]Arrival{
		{At: us(0), Call: 1, Status: 429, Paused: true},
		{At: us(60), Call: 2, Status: 429, Paused: true},
		{At: us(70), Call: 3, Status: 429, Paused: true},
		{At: us(80), Call: 4, Status: 429, Paused: true}, // sent at 55 µs: received, not yet applied
		{At: us(90), Call: 5, Status: 429, Paused: true}, // sent at 75 µs: after the pushback
	}, at(0), seenWith(seen, 5, us(75)), time.Second, 100, 10, 0)
	if applied.IntoKnown != 1 {
		t.Errorf("sent before the budget applied the refusal: into %d, want 1", applied.IntoKnown)
	}
}

// seenWith is seen with call's one send at sent added.
func seenWith(seen *clientSide, call int, sent time.Time) *clientSide {
	seen.sends[call] = []time.Time{sent}
	return seen
}

// TestClientSideHearsBudgets: every headgate client's budget reports its
// refusals' waits to the client side, which measure reads; the baseline
// has no budget to report them.
func TestClientSideHearsBudgets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	for _, c := range Clients {
		t.Run(c.Name, func(t *testing.T) {
			seen := newClientSide(http.DefaultTransport)
			cl, err := c.build(clientEnv{url: srv.URL, rate: 100, burst: 10, tries: 1, base: seen, observer: seen.heard})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond) // (the baseline sleeps the Retry-After)
			defer cancel()
			start := time.Now()
			cl.call(ctx, 1)
			heard := seen.firstPushbackSince(start)
			if c.Headgate == heard.IsZero() {
				t.Errorf("pushback heard at %v; want one from every headgate client, none from the baseline", heard)
			}
		})
	}
}

func TestIdealAndConfigured(t *testing.T) {
	if got := ideal(500, 100, 10); got != 4900*time.Millisecond {
		t.Errorf("ideal(500, 100, 10) = %v, want 4.9s", got)
	}
	if got := ideal(5, 100, 10); got != 0 {
		t.Errorf("ideal(5, 100, 10) = %v, want 0", got)
	}
	for _, tt := range []struct {
		f                   float64
		rate, burst, wr, wb int
	}{{1, 100, 10, 100, 10}, {2, 100, 10, 200, 20}, {0.5, 100, 10, 50, 5}, {0.5, 1, 1, 1, 1}} {
		if r, b := (Scenario{Factor: tt.f}).configured(tt.rate, tt.burst); r != tt.wr || b != tt.wb {
			t.Errorf("configured ×%v of %d, %d = %d, %d; want %d, %d", tt.f, tt.rate, tt.burst, r, b, tt.wr, tt.wb)
		}
	}
}

func TestRender(t *testing.T) {
	out := Render([]Result{
		{Scenario: "exact", Server: "s1", Client: "a", Calls: 500, Refused: 1, Makespan: 5 * time.Second, Ideal: 4 * time.Second},
		{Scenario: "exact", Server: "s1", Client: "b", Skipped: "why not"},
		{Scenario: "pause", Server: "s1", Client: "a", Calls: 500, Makespan: 7 * time.Second, Ideal: 7 * time.Second,
			Paused: true, IntoKnown: 2, RetrySeen: true, RetryDelay: -3 * time.Millisecond, Failed: 1},
		{Scenario: "half", Server: "s1", Client: "a", Calls: 500, Makespan: 10 * time.Second, Ideal: 10 * time.Second, ConfiguredSlack: maxSlack},
		{Scenario: "half", Server: "s2", Client: "a", Calls: 500, Makespan: 10 * time.Second, Ideal: 10 * time.Second, ConfiguredSlack: 2500 * time.Microsecond},
		{Scenario: "half", Server: "s3", Client: "a", Calls: 500, Makespan: 10 * time.Second, Ideal: 10 * time.Second},
		{Scenario: "exact", Server: "s4", Client: "a", Calls: 500, Refused: 2, Makespan: 4600 * time.Millisecond, Ideal: 4 * time.Second,
			Phase: 450 * time.Millisecond, Floor: 4580 * time.Millisecond},
	})
	for _, want := range []string{
		"| server | a | b |",
		"| s1 | 0.2% · 1.25× | – |",
		"| s1 | 1.00× · 2 · −3 ms · **1 failed** |",
		"| s1 | 1.00× · ✗ |",
		"| s2 | 1.00× · ±2.5 ms |",
		"| s3 | 1.00× · ✓ |",
		"– why not",
		"| s4 | 0.4% · 1.15× (floor 1.15×) |  |",
		"(floor N×): on a sliding-window server",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Render lacks %q:\n%s", want, out)
		}
	}
}

// TestNamesHoldNoCommas: cmd/matrix takes lists of names, comma-separated.
func TestNamesHoldNoCommas(t *testing.T) {
	for _, s := range Servers {
		if strings.Contains(s.Name, ",") {
			t.Errorf("server %q holds a comma", s.Name)
		}
	}
	for _, c := range Clients {
		if strings.Contains(c.Name, ",") {
			t.Errorf("client %q holds a comma", c.Name)
		}
	}
}
