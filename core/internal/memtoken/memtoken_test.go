package memtoken

import (
	"reflect"
	"strings"
	"testing"
)

// TestRoundTrip: Parse reads back what was written, with and without
// extra dimensions; a name past 65535 bytes is cut there.
func TestRoundTrip(t *testing.T) {
	if got, ok := Parse(New(-5, 7)); !ok || !reflect.DeepEqual(got, Turn{TATBefore: -5, TATAfter: 7}) {
		t.Fatalf("Parse(New(-5, 7)) = %+v, %v", got, ok)
	}
	long := strings.Repeat("x", 1<<16+3)
	dims := []Dim{{Before: 1, After: 2, N: 3, Seq: 4, Name: "tokens"}, {Before: -1, After: 0, N: 0, Seq: 9, Name: long}}
	b := AppendDims(New(10, 20), 30, 40)
	for _, d := range dims {
		b = AppendDim(b, d)
	}
	got, ok := Parse(string(b))
	dims[1].Name = long[:1<<16-1]
	want := Turn{TATBefore: 10, TATAfter: 20, LastBefore: 30, SendAt: 40, Dims: dims}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse = %+v, %v; want %+v", got, ok, want)
	}
	if got, ok := Parse(string(AppendDims(New(1, 2), 3, 4))); !ok || got.Dims == nil || len(got.Dims) != 0 {
		t.Fatalf("a token with no dimension yet: %+v, %v; want Dims empty, not nil", got, ok)
	}
}

// TestParseRejects: tokens of other lengths, or cut short, are not ok.
func TestParseRejects(t *testing.T) {
	full := string(AppendDim(AppendDims(New(1, 2), 3, 4), Dim{Name: "tokens"}))
	for _, tok := range []string{"", "short", full[:20], full[:40], full[:len(full)-1]} {
		if _, ok := Parse(tok); ok {
			t.Errorf("Parse(%d bytes) ok", len(tok))
		}
	}
}
