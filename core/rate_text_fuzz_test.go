package core

import (
	"errors"
	"testing"
	"time"
)

// FuzzParseRate: any text either parses to a valid rate whose text reads
// back to the same rate (and writes the same text again), or is an
// ErrInvalidConfig error that leaves the zero Rate. Never a panic.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{
		"5/s", "600/min", "5000/h", "10/100ms", "5/sec", "300/minute", "1/hour", "5 / s",
		"/1s", "0/s", "0", "", "-5/s", "5/-1s", "1/2h0m0s", "3/1m30s", "1/µs", "99999999999999999999/s",
		"1/9223372036854775807ns", "2000000000/s", "5/s/s", "1/.5s", "1/+1s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("ParseRate(%q) error %v does not match ErrInvalidConfig", s, err)
			}
			if r != (Rate{}) {
				t.Fatalf("ParseRate(%q) = %v with an error", s, r)
			}
			return
		}
		if verr := r.validate("rate"); verr != nil {
			t.Fatalf("ParseRate(%q) = %#v, which NewBudget rejects: %v", s, r, verr)
		}
		text, err := r.MarshalText()
		if err != nil {
			t.Fatalf("ParseRate(%q) = %#v; MarshalText: %v", s, r, err)
		}
		var back Rate
		if err := back.UnmarshalText(text); err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %#v; UnmarshalText(%q) = %#v, %v", s, r, text, back, err)
		}
		if again, _ := back.MarshalText(); string(again) != string(text) {
			t.Fatalf("text of %#v is %q, then %q", r, text, again)
		}
	})
}

// FuzzRateTextRoundTrip: every valid Rate value marshals and reads back to
// exactly the same Requests and Period.
func FuzzRateTextRoundTrip(f *testing.F) {
	for _, r := range []Rate{
		PerSecond(5), PerMinute(300), PerHour(5000), {10, 100 * time.Millisecond},
		{1, 1<<63 - 1}, {1, time.Nanosecond}, {25, 18 * time.Second}, {3, 1234567},
	} {
		f.Add(int64(r.Requests), int64(r.Period))
	}
	f.Fuzz(func(t *testing.T, n, period int64) {
		if int64(int(n)) != n {
			t.Skip() // not an int on this platform
		}
		r := Rate{Requests: int(n), Period: time.Duration(period)}
		text, err := r.MarshalText()
		if r.validate("rate") != nil {
			if err == nil && r != (Rate{}) {
				t.Fatalf("%#v is invalid but marshals as %q", r, text)
			}
			return
		}
		if err != nil {
			t.Fatalf("%#v.MarshalText(): %v", r, err)
		}
		var back Rate
		if err := back.UnmarshalText(text); err != nil || back != r {
			t.Fatalf("%#v marshals as %q, which reads back as %#v, %v", r, text, back, err)
		}
	})
}
