package core

import (
	"net/http"
	"testing"
)

func TestLaneMatchesWholeSegments(t *testing.T) {
	cases := []struct {
		fragment, path string
		want           bool
	}{
		{"/exports", "/v2/exports", true},
		{"/exports", "/v2/exports/orders.csv", true},
		{"/exports", "/exports", true},
		{"/exports", "/exports/", true},
		{"exports", "/v2/exports", true},
		{"/exports/", "/v2/exports/x", true},
		{"/exports", "/v2/exports-archive", false},
		{"/exports", "/v2/myexports", false},
		{"/exports", "/v2/export", false},
		{"/exports", "/", false},
		{"/exports", "", false},
		{"/v2/exports", "/api/v2/exports/1", true},
		{"/v2/exports", "/v2/other/exports", false},
		{"/v2/exports", "/v22/exports", false},
		{"/a/b", "/a/a/b", true},      // a match after a false start
		{"/a/b", "/a/bc/a/b/c", true}, // the second occurrence
		{"/search", "/search-v2/search", true},
	}
	for _, c := range cases {
		l := lane{fragment: "/" + trimSlashes(c.fragment)}
		if got := l.matches(c.path); got != c.want {
			t.Errorf("lane %q matches %q = %v, want %v", c.fragment, c.path, got, c.want)
		}
	}
}

func trimSlashes(s string) string {
	for len(s) > 0 && s[0] == '/' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func TestFirstMatchingLaneWins(t *testing.T) {
	def, exports, orders := MustBudget(PerSecond(1)), MustBudget(PerSecond(2)), MustBudget(PerSecond(3))
	tr := NewTransport(http.DefaultTransport, def, WithLane("/exports", exports), WithLane("/orders", orders))
	for _, c := range []struct {
		path string
		want *Budget
	}{
		{"/v2/exports/orders", exports}, // both match: the first lane wins
		{"/v2/orders/exports", exports},
		{"/v2/orders/1", orders},
		{"/v2/users", def},
		{"/v2/exports-archive", def},
	} {
		if got := tr.BudgetFor(c.path); got != c.want {
			t.Errorf("BudgetFor(%q) = %v, want %v", c.path, got.Rate(), c.want.Rate())
		}
	}
}

func TestWithLaneRejectsEmptyFragment(t *testing.T) {
	for _, f := range []string{"", "/", "//"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithLane(%q) did not panic", f)
				}
			}()
			WithLane(f, MustBudget(PerSecond(1)))
		}()
	}
}
