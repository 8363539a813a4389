package num

import (
	"math"
	"testing"
	"time"
)

func TestParseGoDuration(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"6m0s", 6 * time.Minute, true},
		{"1s", time.Second, true},
		{"20ms", 20 * time.Millisecond, true},
		{"1h2m3.5s", time.Hour + 2*time.Minute + 3500*time.Millisecond, true},
		{"0.5s", 500 * time.Millisecond, true},
		{"1.5h", 90 * time.Minute, true},
		{"7us", 7 * time.Microsecond, true},
		{"7µs", 7 * time.Microsecond, true},
		{"7μs", 7 * time.Microsecond, true},
		{"3ns", 3 * time.Nanosecond, true},
		{"0s", 0, true},
		{"99999999999999h", math.MaxInt64, true},
		{"9223372036s9223372036s", math.MaxInt64, true},
		{"-1s", 0, false},
		{"+1s", 0, false},
		{"1", 0, false},
		{"s", 0, false},
		{"1x", 0, false},
		{"1h-2m", 0, false},
		{"1 s", 0, false},
		{".s", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseGoDuration(tt.value)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseGoDuration(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		value string
		want  Decimal
		ok    bool
	}{
		{"0", Decimal{}, true},
		{"2.0", Decimal{Int: 2}, true},
		{"599.0", Decimal{Int: 599}, true},
		{"1.5", Decimal{Int: 1, Frac: 5e8}, true},
		{".5", Decimal{Frac: 5e8}, true},
		{"5.", Decimal{Int: 5}, true},
		{"0.1234567891", Decimal{Frac: 123456789}, true},
		{"99999999999999999999999", Decimal{Int: DecimalMax}, true},
		{"", Decimal{}, false},
		{".", Decimal{}, false},
		{"-1", Decimal{}, false},
		{"+1", Decimal{}, false},
		{"1e3", Decimal{}, false},
		{" 1", Decimal{}, false},
		{"NaN", Decimal{}, false},
		{"Inf", Decimal{}, false},
		{"1.2.3", Decimal{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseDecimal(tt.value)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("ParseDecimal(%q) = %+v, %v; want %+v, %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
	if d, _ := ParseDecimal("1.5"); d.Duration(time.Second) != 1500*time.Millisecond {
		t.Errorf("1.5 s = %v, want 1.5s", d.Duration(time.Second))
	}
	if d, _ := ParseDecimal("9999999999999"); d.Duration(time.Hour) != math.MaxInt64 {
		t.Errorf("9999999999999 h = %v, want saturated", d.Duration(time.Hour))
	}
	if d, _ := ParseDecimal("0.0000005"); d.Duration(time.Millisecond) != 0 {
		t.Errorf("0.0000005 ms = %v, want 0 (below a nanosecond)", d.Duration(time.Millisecond))
	}
}

func TestParseCount(t *testing.T) {
	for v, want := range map[string]int{"0": 0, " 12 ": 12, "599.0": 599, "0.9": 0, "99999999999999999999": math.MaxInt} {
		if got, ok := ParseCount(v); !ok || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d, true", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "-1", "1e3", "1/2", "x"} {
		if got, ok := ParseCount(v); ok {
			t.Errorf("ParseCount(%q) = %d, true; want invalid", v, got)
		}
	}
}
