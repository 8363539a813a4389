package sf

import (
	"strings"
	"testing"
)

// TestParseList checks the structured-field parser on its own: which
// inputs are valid Lists and what it keeps of them.
func TestParseList(t *testing.T) {
	tests := []struct {
		name  string
		value string
		n     int
		ok    bool
	}{
		{"empty", "", 0, true},
		{"spaces", "   ", 0, true},
		{"one-string", `"a"`, 1, true},
		{"tokens", `a, b/c:d, *e`, 3, true},
		{"numbers", `1, -2, 3.5, -0.125`, 4, true},
		{"booleans", `?0, ?1`, 2, true},
		{"byte-sequence", `:aGVsbG8=:`, 1, true},
		{"date", `@1700000000`, 1, true},
		{"display-string", `%"f%c3%bc"`, 1, true},
		{"inner-lists", `(a "b" 1);x, ()`, 2, true},
		{"params", `a;x;y=1;z="s";*w=?0`, 1, true},
		{"max-members", "a" + strings.Repeat(", a", MaxMembers-1), MaxMembers, true},
		{"too-many-members", "a" + strings.Repeat(", a", MaxMembers), 0, false},
		{"trailing-comma", `a,`, 0, false},
		{"leading-comma", `,a`, 0, false},
		{"double-comma", `a,,b`, 0, false},
		{"missing-comma", `a b`, 0, false},
		{"bad-string-char", "\"a\x01\"", 0, false},
		{"non-ascii-string", "\"caf\xc3\xa9\"", 0, false},
		{"bad-escape", `"\a"`, 0, false},
		{"unterminated-string", `"abc`, 0, false},
		{"bad-byte-sequence", `:ab$:`, 0, false},
		{"unterminated-byte-sequence", `:abc`, 0, false},
		{"bad-boolean", `?2`, 0, false},
		{"decimal-date", `@1.5`, 0, false},
		{"bad-display-string", `%"%C3"`, 0, false},
		{"integer-too-long", `1234567890123456`, 0, false},
		{"integer-15-digits", `123456789012345`, 1, true},
		{"decimal-too-long", `1234567890123.5`, 0, false},
		{"decimal-fraction-too-long", `1.2345`, 0, false},
		{"decimal-no-fraction", `1.`, 0, false},
		{"lone-minus", `-`, 0, false},
		{"bad-key", `a;X=1`, 0, false},
		{"unterminated-inner-list", `(a b`, 0, false},
		{"inner-list-no-space", `(a"b")`, 0, false},
		{"too-many-inner-items", "(" + strings.Repeat("a ", MaxMembers+1) + ")", 0, false},
		{"bad-start", `!a`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var members [MaxMembers]Member
			n, ok := ParseList(tt.value, &members)
			if n != tt.n || ok != tt.ok {
				t.Errorf("ParseList(%q) = %d, %v; want %d, %v", tt.value, n, ok, tt.n, tt.ok)
			}
		})
	}

	var members [MaxMembers]Member
	n, ok := ParseList(`"x\"y";q=100;qu="request";w=2.5;r=-3;t=0;q=7`, &members)
	m := members[0]
	if n != 1 || !ok || m.Value != (Value{Kind: String, Raw: `x\"y`}) ||
		m.Params[ParamQ] != (Value{Kind: Integer, Milli: 7000}) ||
		m.Params[ParamQU] != (Value{Kind: String, Raw: "request"}) ||
		m.Params[ParamW] != (Value{Kind: Decimal, Milli: 2500}) ||
		m.Params[ParamR] != (Value{Kind: Integer, Milli: -3000}) ||
		m.Params[ParamT] != (Value{Kind: Integer, Milli: 0}) {
		t.Errorf("ParseList(params) = %d, %v, %+v", n, ok, m)
	}
}

func TestParseDict(t *testing.T) {
	var members [MaxMembers]Member
	n, ok := ParseDict(`limit=100, remaining=0;x, reset=30, flag, list=(a b)`, &members)
	if !ok || n != 5 || members[0].Key != "limit" || members[0].Value.Milli != 100000 ||
		members[1].Key != "remaining" || members[1].Value != (Value{Kind: Integer}) ||
		members[3].Key != "flag" || members[3].Value.Kind != Other {
		t.Errorf("ParseDict(draft-07 form) = %d, %v, %+v", n, ok, members[:n])
	}
	for _, bad := range []string{`Limit=1`, `limit=`, `limit=1,`, `=1`} {
		if _, ok := ParseDict(bad, &members); ok {
			t.Errorf("ParseDict(%q) ok, want malformed", bad)
		}
	}
}

func TestUnescape(t *testing.T) {
	for raw, want := range map[string]string{
		``:          ``,
		`plain`:     `plain`,
		`a\"b`:      `a"b`,
		`a\\b`:      `a\b`,
		`\"\\\"\\`:  `"\"\`,
		`trailing\`: `trailing\`,
	} {
		if got := Unescape(raw); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestJoinLines checks that field lines are joined as RFC 8941 says, and
// that more lines than a field may have members cost nothing.
func TestJoinLines(t *testing.T) {
	if got := JoinLines([]string{"a", "b;x=1"}); got != "a, b;x=1" {
		t.Errorf("JoinLines(a, b;x=1) = %q, want %q", got, "a, b;x=1")
	}
	lines := make([]string, MaxMembers+1)
	for i := range lines {
		lines[i] = "a"
	}
	var members [MaxMembers]Member
	if n, ok := ParseList(JoinLines(lines), &members); ok {
		t.Errorf("ParseList(%d joined lines) = %d, true; want malformed", len(lines), n)
	}
	if allocs := testing.AllocsPerRun(10, func() { JoinLines(lines) }); allocs != 0 {
		t.Errorf("JoinLines(%d lines) allocates %v times, want 0", len(lines), allocs)
	}
}
