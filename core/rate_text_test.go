package core

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

var _ flag.Value = (*Rate)(nil)

func TestParseRateGoodForms(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Rate
		text string // MarshalText of the result
	}{
		{"5/s", PerSecond(5), "5/s"},
		{"600/min", PerMinute(600), "600/min"},
		{"5000/h", PerHour(5000), "5000/h"},
		{"10/100ms", Rate{10, 100 * time.Millisecond}, "10/100ms"},
		{"5/sec", PerSecond(5), "5/s"},
		{"5/second", PerSecond(5), "5/s"},
		{"300/m", PerMinute(300), "300/min"},
		{"300/minute", PerMinute(300), "300/min"},
		{"1/hr", PerHour(1), "1/h"},
		{"1/hour", PerHour(1), "1/h"},
		{"10/1s", PerSecond(10), "10/s"},
		{"10/1m", PerMinute(10), "10/min"},
		{"1/2h", Rate{1, 2 * time.Hour}, "1/2h0m0s"},
		{"25/18s", Rate{25, 18 * time.Second}, "25/18s"},
		{"3/1m30s", Rate{3, 90 * time.Second}, "3/1m30s"},
		{"1/1.5s", Rate{1, 1500 * time.Millisecond}, "1/1.5s"},
		{"1000/ms", Rate{1000, time.Millisecond}, "1000/1ms"},
		{"1/µs", Rate{1, time.Microsecond}, "1/1µs"},
		{"1/24h", Rate{1, 24 * time.Hour}, "1/24h0m0s"},
		{"007/s", PerSecond(7), "7/s"},
		{"5 / s", PerSecond(5), "5/s"},
		{" \t600/min\t ", PerMinute(600), "600/min"},
		{"1000000000/s", PerSecond(1_000_000_000), "1000000000/s"},
		{"1/1ns", Rate{1, time.Nanosecond}, "1/1ns"},
	} {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
			continue
		}
		text, err := got.MarshalText()
		if err != nil || string(text) != tt.text {
			t.Errorf("ParseRate(%q).MarshalText() = %q, %v; want %q", tt.in, text, err, tt.text)
		}
		var back Rate
		if err := back.UnmarshalText(text); err != nil || back != got {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, back, err, got)
		}
	}
}

func TestParseRateBadForms(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string // want: a part of the error message
	}{
		{"empty", "", "is empty"},
		{"blank", "  ", "is empty"},
		{"zero count", "0/s", "count must be positive"},
		{"zero count long", "000/min", "count must be positive"},
		{"bare zero", "0", "period is missing"},
		{"bare number", "5", "period is missing"},
		{"no count", "/1s", "count before the slash is missing"},
		{"no period", "5/", "period after the slash is missing"},
		{"negative count", "-5/s", `count "-5" is not a positive whole number`},
		{"plus sign", "+5/s", `count "+5" is not a positive whole number`},
		{"fraction", "1.5/s", `count "1.5" is not a positive whole number`},
		{"exponent", "1e3/s", `count "1e3" is not a positive whole number`},
		{"underscore", "1_000/s", `count "1_000" is not a positive whole number`},
		{"space inside count", "5 0/s", `count "5 0" is not a positive whole number`},
		{"count overflow", "99999999999999999999/s", "count 99999999999999999999 is too large"},
		{"zero period", "5/0s", "period must be positive, got 0s"},
		{"negative period", "5/-1s", "period must be positive, got -1s"},
		{"period overflow", "5/9999999999h", `period "9999999999h" is not a duration`},
		{"unknown unit", "5/fortnight", `period "fortnight" is not a duration`},
		{"upper case unit", "5/S", `period "S" is not a duration`},
		{"plural", "5/seconds", `period "seconds" is not a duration`},
		{"day", "5/d", `period "d" is not a duration`},
		{"two slashes", "5/s/s", `period "s/s" is not a duration`},
		{"space inside period", "10/100 ms", `period "100 ms" is not a duration`},
		{"too fast", "2000000000/s", "faster than one request per nanosecond"},
		{"garbage", "fast", "period is missing"},
		{"unicode", "５/s", `count "５" is not a positive whole number`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRate(tt.in)
			if err == nil {
				t.Fatalf("ParseRate(%q) = %v, nil; want an error", tt.in, r)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("ParseRate(%q) error = %q; want it to contain %q", tt.in, msg, tt.want)
			}
			if !strings.HasPrefix(msg, "headgate: rate "+strconv.Quote(tt.in)+" is invalid: ") {
				t.Errorf("ParseRate(%q) error = %q; want it to name the input", tt.in, msg)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseRate(%q) error does not match ErrInvalidConfig", tt.in)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "rate" {
				t.Errorf("ParseRate(%q) error = %#v; want a *ConfigError for field rate", tt.in, err)
			}
			if r != (Rate{}) {
				t.Errorf("ParseRate(%q) returned %v with its error; want the zero Rate", tt.in, r)
			}
		})
	}
}

func TestParseRateErrorCutsLongInput(t *testing.T) {
	in := strings.Repeat("x", 10_000)
	_, err := ParseRate(in)
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("ParseRate(10000 bytes) error has %d bytes; want a short message", len(err.Error()))
	}
}

func TestRateUnmarshalTextEmptyIsZero(t *testing.T) {
	r := PerSecond(5)
	if err := r.UnmarshalText(nil); err != nil || r != (Rate{}) {
		t.Fatalf("UnmarshalText(nil) = %v, %v; want the zero Rate, nil", r, err)
	}
	text, err := Rate{}.MarshalText()
	if err != nil || len(text) != 0 {
		t.Fatalf("Rate{}.MarshalText() = %q, %v; want empty, nil", text, err)
	}
}

func TestRateUnmarshalTextErrorLeavesRate(t *testing.T) {
	r := PerMinute(300)
	if err := r.UnmarshalText([]byte("0/s")); err == nil {
		t.Fatal("UnmarshalText(0/s) = nil; want an error")
	}
	if r != PerMinute(300) {
		t.Fatalf("after a failed UnmarshalText, rate = %v; want 300/min unchanged", r)
	}
}

func TestRateMarshalTextInvalid(t *testing.T) {
	for _, r := range []Rate{
		{Requests: -1, Period: time.Second},
		{Requests: 5},
		{Period: time.Second},
		{Requests: 5, Period: -time.Second},
		{Requests: 10, Period: time.Nanosecond},
	} {
		if text, err := r.MarshalText(); err == nil || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Rate%+v.MarshalText() = %q, %v; want an ErrInvalidConfig error", r, text, err)
		}
	}
}

func TestRateAppendText(t *testing.T) {
	b, err := PerMinute(600).AppendText([]byte("rate="))
	if err != nil || string(b) != "rate=600/min" {
		t.Fatalf("AppendText = %q, %v; want \"rate=600/min\"", b, err)
	}
}

// TestRateRoundTripTable checks that the text of rates built in code reads
// back exactly, including periods with no unit word.
func TestRateRoundTripTable(t *testing.T) {
	for _, r := range []Rate{
		PerSecond(1), PerMinute(83), PerHour(5000),
		{25, 18 * time.Second}, {1, 36*time.Hour + time.Nanosecond}, {3, 1234567 * time.Nanosecond},
		{1, math.MaxInt64}, {math.MaxInt32, math.MaxInt32}, {7, 7},
	} {
		text, err := r.MarshalText()
		if err != nil {
			t.Errorf("%#v.MarshalText(): %v", r, err)
			continue
		}
		if string(text) != r.String() {
			t.Errorf("%#v.MarshalText() = %q; want String() = %q", r, text, r.String())
		}
		var back Rate
		if err := back.UnmarshalText(text); err != nil || back != r {
			t.Errorf("UnmarshalText(%q) = %#v, %v; want %#v", text, back, err, r)
		}
	}
}

func TestRateInJSONConfig(t *testing.T) {
	type config struct {
		Rate     Rate `json:"rate"`
		Fallback Rate `json:"fallback"`
	}
	var c config
	if err := json.Unmarshal([]byte(`{"rate":"600/min","fallback":""}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.Rate != PerMinute(600) || c.Fallback != (Rate{}) {
		t.Fatalf("decoded %+v; want rate 600/min and an unset fallback", c)
	}
	out, err := json.Marshal(c)
	if err != nil || string(out) != `{"rate":"600/min","fallback":""}` {
		t.Fatalf("json.Marshal = %s, %v", out, err)
	}
	err = json.Unmarshal([]byte(`{"rate":"0/s"}`), &c)
	if err == nil || !strings.Contains(err.Error(), `headgate: rate "0/s" is invalid`) {
		t.Fatalf("json.Unmarshal of 0/s: %v; want the rate error", err)
	}
}

func TestRateAsFlag(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	r := PerSecond(5)
	fs.Var(&r, "rate", "requests per period")
	if err := fs.Parse([]string{"-rate", "300/minute"}); err != nil {
		t.Fatal(err)
	}
	if r != PerMinute(300) {
		t.Fatalf("-rate 300/minute set %v; want 300/min", r)
	}
	if got := fs.Lookup("rate").Value.String(); got != "300/min" {
		t.Fatalf("flag String() = %q; want 300/min", got)
	}
	err := fs.Parse([]string{"-rate", "fast"})
	if err == nil || !strings.Contains(err.Error(), `headgate: rate "fast" is invalid`) {
		t.Fatalf("-rate fast: %v; want the rate error", err)
	}

	// flag.TextVar uses the encoding interfaces.
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	var tr Rate
	fs.TextVar(&tr, "rate", PerHour(5000), "requests per period")
	if tr != PerHour(5000) {
		t.Fatalf("TextVar default = %v; want 5000/h", tr)
	}
	if err := fs.Parse([]string{"-rate=10/100ms"}); err != nil || tr != (Rate{10, 100 * time.Millisecond}) {
		t.Fatalf("-rate=10/100ms: %v, %v", tr, err)
	}
}

func TestNewBudgetOrDisabled(t *testing.T) {
	t.Run("zero rate is disabled", func(t *testing.T) {
		var events int
		b, err := NewBudgetOrDisabled(Rate{}, WithName("cfg"), WithObserver(func(Event) { events++ }))
		if err != nil {
			t.Fatal(err)
		}
		if b.pacer != nil || b.Name() != "cfg" {
			t.Fatalf("NewBudgetOrDisabled(zero) = disabled %v, name %q; want a disabled budget named cfg", b.pacer == nil, b.Name())
		}
		for range 1000 { // a real budget at any rate would make some of these wait
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			p, err := b.Acquire(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			p.Release()
		}
		if events != 0 {
			t.Fatalf("%d events from a disabled budget; want none", events)
		}
	})
	t.Run("rate gives a real budget", func(t *testing.T) {
		b, err := NewBudgetOrDisabled(PerMinute(600), WithBurst(2))
		if err != nil {
			t.Fatal(err)
		}
		if b.pacer == nil || b.Rate() != PerMinute(600) || b.pace.burst != 2 {
			t.Fatalf("NewBudgetOrDisabled(600/min) = disabled %v, rate %v, burst %d", b.pacer == nil, b.Rate(), b.pace.burst)
		}
	})
	t.Run("invalid rate is an error", func(t *testing.T) {
		if _, err := NewBudgetOrDisabled(Rate{Requests: -1, Period: time.Second}); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("NewBudgetOrDisabled(-1/s) error = %v; want ErrInvalidConfig", err)
		}
	})
	t.Run("invalid option is an error even when disabled", func(t *testing.T) {
		_, err := NewBudgetOrDisabled(Rate{}, WithMaxInFlight(-1))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "WithMaxInFlight" {
			t.Fatalf("NewBudgetOrDisabled(zero, WithMaxInFlight(-1)) error = %v; want a WithMaxInFlight config error", err)
		}
	})
	t.Run("from config text", func(t *testing.T) {
		var cfg struct{ Rate Rate }
		if err := json.Unmarshal([]byte(`{"Rate":""}`), &cfg); err != nil {
			t.Fatal(err)
		}
		b, err := NewBudgetOrDisabled(cfg.Rate)
		if err != nil || b.pacer != nil {
			t.Fatalf("empty rate in config: %v; want a disabled budget", err)
		}
		if _, err := NewBudget(cfg.Rate); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("NewBudget(empty rate) error = %v; want ErrInvalidConfig: only NewBudgetOrDisabled disables", err)
		}
	})
}
