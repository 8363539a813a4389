package matrix

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// A trace line pairs a call's kth try with its kth arrival at the server,
// puts it in the server's second, and marks refusals; a note (the budget's
// rate changing) goes at its instant, paired with no arrival.
func TestWriteTrace(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 900e6, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	h := http.Header{}
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("Retry-After", "1")
	tries := []try{
		{call: 7, sent: at(150), recv: at(151), status: 200},
		{call: 7, sent: at(10), recv: at(12), status: 429, headers: headersOf(h)},
		{sent: at(13), recv: at(13), note: "rate 100.000 -> 99.000/s"},
	}
	arrivals := []Arrival{{At: at(11), Call: 7, Status: 429}, {At: at(150), Call: 7, Status: 200}}
	var b strings.Builder
	writeTrace(&b, "cell", start, tries, arrivals)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 2 of header, 2 tries and a note between them:\n%s", len(lines), b.String())
	}
	first, second := strings.Fields(lines[2]), strings.Fields(lines[4])
	if note := strings.Fields(lines[3]); strings.Join(note, " ") != "13.0 rate 100.000 -> 99.000/s" {
		t.Errorf("note: %q; want at 13.0, the rate change", lines[3])
	}
	if first[0] != "10.0" || first[2] != "11.0" || first[3] != "0+911" || first[5] != "429" || !strings.Contains(lines[2], "Remaining=0 Retry-After=1 <<<") {
		t.Errorf("first try: %q; want sent 10.0, at the server 11.0 in second 0 at +911 ms, refused, its headers", lines[2])
	}
	if second[0] != "150.0" || second[2] != "150.0" || second[3] != "1+050" || strings.Contains(lines[4], "<<<") {
		t.Errorf("second try: %q; want sent 150.0, at the server 150.0 in second 1 at +050 ms, admitted", lines[4])
	}
}
