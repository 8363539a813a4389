package ascii

import "testing"

func TestFold(t *testing.T) {
	for _, tt := range []struct {
		a, b        string
		equal, cont bool
	}{
		{"Retry-After", "retry-after", true, true},
		{"application/JSON; charset=utf-8", "json", false, true},
		{"text/event-stream", "TEXT/EVENT-STREAM", true, true},
		{"ſ", "s", false, false}, // ASCII only: no Unicode folding
		{"abc", "abcd", false, false},
		{"", "", true, true},
	} {
		if got := EqualFold(tt.a, tt.b); got != tt.equal {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.equal)
		}
		if got := ContainsFold(tt.a, tt.b); got != tt.cont {
			t.Errorf("ContainsFold(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.cont)
		}
	}
	if got := TrimOWS(" \t a b \t"); got != "a b" {
		t.Errorf("TrimOWS = %q, want %q", got, "a b")
	}
}
