package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// captureHandler records every record it is handed, at or above min.
type captureHandler struct {
	min     slog.Level
	mu      sync.Mutex
	records []slog.Record
	enabled atomic.Int32 // calls to Enabled
}

func (h *captureHandler) Enabled(_ context.Context, l slog.Level) bool {
	h.enabled.Add(1)
	return l >= h.min
}

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

func (h *captureHandler) all() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]slog.Record(nil), h.records...)
}

// attrs renders a record's attributes as "key=kind:value" in order.
func attrs(r slog.Record) string {
	var parts []string
	r.Attrs(func(a slog.Attr) bool {
		parts = append(parts, fmt.Sprintf("%s=%s:%v", a.Key, a.Value.Kind(), a.Value))
		return true
	})
	return strings.Join(parts, " ")
}

func TestSlogObserverRecordPerEvent(t *testing.T) {
	for _, tt := range []struct {
		name  string
		e     Event
		level slog.Level
		msg   string
		attrs string
	}{
		{"paced", Event{Budget: "api", Reason: Paced, Wait: 200 * time.Millisecond},
			slog.LevelDebug, "headgate: call waited for its turn", "budget=String:api reason=String:paced wait=Duration:200ms"},
		{"throttled", Event{Budget: "api", Reason: Throttled, Wait: time.Second},
			slog.LevelDebug, "headgate: call waited for its turn at a throttled rate", "budget=String:api reason=String:throttled wait=Duration:1s"},
		{"paused", Event{Budget: "api", Reason: Paused, Wait: 3 * time.Second},
			slog.LevelDebug, "headgate: call waited for a server pause", "budget=String:api reason=String:paused wait=Duration:3s"},
		{"slot wait", Event{Budget: "api", Reason: SlotWait, Wait: 50 * time.Millisecond},
			slog.LevelDebug, "headgate: call waited for a concurrency slot", "budget=String:api reason=String:slot_wait wait=Duration:50ms"},
		{"pushback", Event{Budget: "api", Reason: Pushback, Wait: 30 * time.Second, Status: 429},
			slog.LevelWarn, "headgate: server asked the budget to pause", "budget=String:api reason=String:pushback status=Int64:429 pause=Duration:30s"},
		{"rate cut by a response", Event{Budget: "api", Reason: RateChanged, Status: 503, OldRate: 10, NewRate: 5},
			slog.LevelWarn, "headgate: budget rate decreased", "budget=String:api reason=String:rate_changed status=Int64:503 old_rate=Float64:10 new_rate=Float64:5"},
		{"rate cut by SetRate", Event{Budget: "api", Reason: RateChanged, OldRate: 10, NewRate: 2.5},
			slog.LevelWarn, "headgate: budget rate decreased", "budget=String:api reason=String:rate_changed old_rate=Float64:10 new_rate=Float64:2.5"},
		{"recovery", Event{Budget: "api", Reason: RateChanged, Status: 200, OldRate: 5, NewRate: 10},
			slog.LevelInfo, "headgate: budget rate increased", "budget=String:api reason=String:rate_changed status=Int64:200 old_rate=Float64:5 new_rate=Float64:10"},
		{"rate set to the same", Event{Budget: "api", Reason: RateChanged, OldRate: 10, NewRate: 10},
			slog.LevelInfo, "headgate: budget rate set", "budget=String:api reason=String:rate_changed old_rate=Float64:10 new_rate=Float64:10"},
		{"leaked body", Event{Budget: "api", Reason: LeakedBody},
			slog.LevelWarn, "headgate: response body never closed; the garbage collector freed its slot", "budget=String:api reason=String:leaked_body"},
		{"no name", Event{Reason: Paced, Wait: time.Millisecond},
			slog.LevelDebug, "headgate: call waited for its turn", "reason=String:paced wait=Duration:1ms"},
		{"unknown reason", Event{Budget: "api", Reason: Reason(99), Wait: time.Second, Status: 418, OldRate: 1, NewRate: 2},
			slog.LevelInfo, "headgate: budget event", "budget=String:api reason=String:unknown wait=Duration:1s status=Int64:418 old_rate=Float64:1 new_rate=Float64:2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &captureHandler{min: slog.LevelDebug}
			SlogObserver(slog.New(h))(tt.e)
			recs := h.all()
			if len(recs) != 1 {
				t.Fatalf("%d records; want 1", len(recs))
			}
			r := recs[0]
			if r.Level != tt.level || r.Message != tt.msg {
				t.Errorf("record = %v %q; want %v %q", r.Level, r.Message, tt.level, tt.msg)
			}
			if got := attrs(r); got != tt.attrs {
				t.Errorf("attrs = %s\nwant     %s", got, tt.attrs)
			}
			if r.Time.IsZero() || r.PC != 0 {
				t.Errorf("record time %v, pc %d; want a time and no source", r.Time, r.PC)
			}
		})
	}
}

func TestSlogObserverDisabledLevelBuildsNothing(t *testing.T) {
	h := &captureHandler{min: slog.LevelInfo}
	obs := SlogObserver(slog.New(h))
	wait := Event{Budget: "api", Reason: Paced, Wait: time.Second}
	obs(wait)
	if n := len(h.all()); n != 0 || h.enabled.Load() != 1 {
		t.Fatalf("a DEBUG event at INFO: %d records, %d Enabled calls; want 0 and 1", n, h.enabled.Load())
	}
	if allocs := testing.AllocsPerRun(100, func() { obs(wait) }); allocs != 0 {
		t.Fatalf("a DEBUG event at INFO allocates %v times; want 0", allocs)
	}
	obs(Event{Budget: "api", Reason: Pushback, Status: 429, Wait: time.Second})
	if n := len(h.all()); n != 1 {
		t.Fatalf("a WARN event at INFO: %d records; want 1", n)
	}
}

func TestSlogObserverNilLoggerUsesDefault(t *testing.T) {
	old := slog.Default()
	defer slog.SetDefault(old)
	obs := SlogObserver(nil) // built before the default is set: looked up per event
	h := &captureHandler{min: slog.LevelDebug}
	slog.SetDefault(slog.New(h))
	obs(Event{Reason: Pushback, Status: 503, Wait: time.Second})
	if recs := h.all(); len(recs) != 1 || recs[0].Level != slog.LevelWarn {
		t.Fatalf("records on the default logger: %v; want one WARN", recs)
	}
}

// TestSlogObserverFromBudget drives a real budget through every event kind
// (but LeakedBody, below) in virtual time and checks the log it writes.
func TestSlogObserverFromBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
			Level: slog.LevelDebug,
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			},
		}))
		b := MustBudget(PerSecond(10), WithBurst(1), WithMaxInFlight(1), WithName("api"),
			WithObserver(SlogObserver(logger)))
		ctx := context.Background()
		acquire := func() Permit {
			t.Helper()
			p, err := b.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}

		p := acquire() // t=0: the burst, no wait
		got := make(chan Permit)
		go func() { // waits for the slot, then its turn
			p, err := b.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- p
		}()
		time.Sleep(40 * time.Millisecond)
		p.Release()
		p = <-got // slot at 40ms, turn at 100ms
		// A refusal that reports no quota: the rate is cut to 5/s.
		p.Observe(http.StatusServiceUnavailable, nil)
		p.Release()
		// The next turn at the throttled rate, 200ms after the last; a
		// pause of 6s.
		p = acquire()
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"6"}})
		p.Release()
		// Waits for the pause, to t=6.3s; admitted over 5s after the cut
		// (the time a linear climb of a tenth a second takes): back at 10/s.
		p = acquire()
		p.Observe(http.StatusOK, nil)
		p.Release()
		if err := b.SetRate(PerSecond(4)); err != nil {
			t.Fatal(err)
		}

		want := []string{
			`level=DEBUG msg="headgate: call waited for a concurrency slot" budget=api reason=slot_wait wait=40ms`,
			`level=DEBUG msg="headgate: call waited for its turn" budget=api reason=paced wait=60ms`,
			`level=WARN msg="headgate: budget rate decreased" budget=api reason=rate_changed status=503 old_rate=10 new_rate=5`,
			`level=DEBUG msg="headgate: call waited for its turn at a throttled rate" budget=api reason=throttled wait=200ms`,
			`level=WARN msg="headgate: server asked the budget to pause" budget=api reason=pushback status=429 pause=6s`,
			`level=DEBUG msg="headgate: call waited for a server pause" budget=api reason=paused wait=6s`,
			`level=INFO msg="headgate: budget rate increased" budget=api reason=rate_changed status=200 old_rate=5 new_rate=10`,
			`level=WARN msg="headgate: budget rate decreased" budget=api reason=rate_changed old_rate=10 new_rate=4`,
		}
		if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if n := b.InFlight(); n != 0 {
			t.Fatalf("InFlight = %d after the scenario; want 0", n)
		}
	})
}

// TestSlogObserverLeakedBody drops a response body through the transport
// and lets the garbage collector free its slot (real time: the collector's
// cleanups run outside any synctest bubble).
func TestSlogObserverLeakedBody(t *testing.T) {
	h := &captureHandler{min: slog.LevelDebug}
	b := MustBudget(PerSecond(1000), WithMaxInFlight(1), WithName("api"), WithObserver(SlogObserver(slog.New(h))))
	prov, err := quotatest.New(quotatest.Config{Requests: 1000, Period: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: NewTransport(prov.Transport(), b)}
	func() {
		resp, err := c.Get("http://api.example/v1/items")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.StatusCode // dropped without Close
	}()
	for deadline := time.Now().Add(5 * time.Second); b.InFlight() != 0 && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.InFlight(); n != 0 {
		t.Fatalf("InFlight = %d; the collector never freed the slot", n)
	}
	var leaked []slog.Record
	for _, r := range h.all() {
		if r.Message == "headgate: response body never closed; the garbage collector freed its slot" {
			leaked = append(leaked, r)
		}
	}
	if len(leaked) != 1 || leaked[0].Level != slog.LevelWarn || attrs(leaked[0]) != "budget=String:api reason=String:leaked_body" {
		t.Fatalf("leaked-body records: %v; want one WARN with budget=api reason=leaked_body", leaked)
	}
}

func TestObservers(t *testing.T) {
	var got []string
	rec := func(tag string) Observer {
		return func(e Event) { got = append(got, tag+":"+e.Reason.String()) }
	}
	if o := Observers(); o != nil {
		t.Error("Observers() != nil; want nil")
	}
	if o := Observers(nil, nil); o != nil {
		t.Error("Observers(nil, nil) != nil; want nil")
	}
	Observers(nil, rec("only"), nil)(Event{Reason: Paced})
	both := Observers(rec("a"), nil, rec("b"))
	both(Event{Reason: Pushback})
	both(Event{Reason: RateChanged})
	want := "only:paced a:pushback b:pushback a:rate_changed b:rate_changed"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("events seen: %s; want %s", s, want)
	}
}

// TestObserversSliceIsCopied: changing the caller's slice afterwards
// changes nothing.
func TestObserversSliceIsCopied(t *testing.T) {
	var a, b int
	list := []Observer{func(Event) { a++ }, func(Event) { a++ }}
	o := Observers(list...)
	list[1] = func(Event) { b++ }
	o(Event{Reason: Paced})
	if a != 2 || b != 0 {
		t.Fatalf("calls a=%d b=%d; want 2 and 0", a, b)
	}
}

func TestSlogObserverStoreEvents(t *testing.T) {
	var buf bytes.Buffer
	obs := SlogObserver(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	obs(Event{Budget: "api", Reason: StoreFailure, Err: errors.New("dial tcp: refused")})
	obs(Event{Budget: "api", Reason: StoreRecovered})
	out := buf.String()
	for _, want := range []string{`level=ERROR msg="headgate: budget store unreachable" budget=api reason=store_failure error="dial tcp: refused"`,
		`level=INFO msg="headgate: budget store reachable again" budget=api reason=store_recovered`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
}
