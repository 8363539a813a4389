package httpdate

import (
	"testing"
	"time"
)

// TestParseTwoDigitYear checks the RFC 9110 rule: a two-digit year
// that would put the date more than 50 years after now is in the past
// century.
func TestParseTwoDigitYear(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		value string
		year  int
	}{
		{"Sunday, 06-Nov-94 08:49:37 GMT", 1994},
		{"Wednesday, 06-Nov-30 08:49:37 GMT", 2030},
		{"Monday, 06-Nov-75 08:49:37 GMT", 2075},
		{"Monday, 06-Nov-76 08:49:37 GMT", 1976},
		{"Saturday, 06-Nov-00 08:49:37 GMT", 2000},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.value, now)
		if !ok || got.Year() != tt.year {
			t.Errorf("Parse(%q, 2025-01-01) = %v, %v; want year %d", tt.value, got, ok, tt.year)
		}
	}
	late := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, ok := Parse("Friday, 06-Nov-01 08:49:37 GMT", late); !ok || got.Year() != 2101 {
		t.Errorf("Parse(06-Nov-01, 2099-01-01) = %v, %v; want year 2101", got, ok)
	}
}

func TestParseRFC3339(t *testing.T) {
	base := time.Date(2025, 6, 1, 12, 0, 30, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Time
		ok    bool
	}{
		{"utc", "2025-06-01T12:00:30Z", base, true},
		{"lower-z", "2025-06-01t12:00:30z", base, true},
		{"space", "2025-06-01 12:00:30Z", base, true},
		{"fraction", "2025-06-01T12:00:30.5Z", base.Add(500 * time.Millisecond), true},
		{"offset", "2025-06-01T14:00:30+02:00", base, true},
		{"negative-offset", "2025-06-01T07:00:30-05:00", base, true},
		{"no-zone", "2025-06-01T12:00:30", time.Time{}, false},
		{"bad-offset", "2025-06-01T12:00:30+0200", time.Time{}, false},
		{"bad-date", "2025-02-30T12:00:30Z", time.Time{}, false},
		{"bad-month", "2025-13-01T12:00:30Z", time.Time{}, false},
		{"date-only", "2025-06-01", time.Time{}, false},
		{"trailing", "2025-06-01T12:00:30Zx", time.Time{}, false},
		{"garbage", "tomorrow", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRFC3339(tt.value)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Errorf("ParseRFC3339(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
			}
		})
	}
}
