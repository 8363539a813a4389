package matrix

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// A cell's per-request trace (Env.Trace): when each try was sent and its
// answer came (client side), when it reached the server and in which of the
// server's whole-second windows, its status and the quota headers it
// carried, and each change of a headgate client's rate (adaptive
// throttling: a cut, a trim, growth back) at the instant the budget
// reported it. It is what tells which requests a cell's 429s were and why.

// try is one request as the client saw it.
type try struct {
	call       int
	sent, recv time.Time
	status     int    // 0: no response
	headers    string // the quota headers, as sent
	note       string // not a request: what the budget reported at sent (heard)
}

// quotaHeaders are the headers a trace line shows.
var quotaHeaders = []string{"X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"}

// headersOf is h's quota headers, "name=value" space-separated.
func headersOf(h http.Header) string {
	var b strings.Builder
	for _, k := range quotaHeaders {
		if v := h.Get(k); v != "" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%s", strings.TrimPrefix(k, "X-RateLimit-"), v)
		}
	}
	return b.String()
}

// writeTrace writes the tries of one cell to w, in send order: offsets in
// ms from start; arr is the arrival at the server (the call's k-th arrival
// for its k-th try), win the arrival's whole Unix second counted from
// start's and +ms its offset in that second (a quotatest fixed window is
// the Unix second); a note, at its instant, in the headers' column.
func writeTrace(w io.Writer, name string, start time.Time, tries []try, arrivals []Arrival) {
	byCall := map[int][]Arrival{}
	for _, a := range arrivals {
		byCall[a.Call] = append(byCall[a.Call], a)
	}
	sort.SliceStable(tries, func(i, j int) bool { return tries[i].sent.Before(tries[j].sent) })
	nth := map[int]int{}
	ms := func(t time.Time) float64 { return float64(t.Sub(start)) / 1e6 }
	fmt.Fprintf(w, "# %s\n# sent_ms recv_ms arr_ms win+ms call status headers\n", name)
	base := start.Unix()
	for _, t := range tries {
		if t.note != "" {
			fmt.Fprintf(w, "%9.1f %9s %9s %8s %4s %3s %s\n", ms(t.sent), "", "", "", "", "", t.note)
			continue
		}
		k := nth[t.call]
		nth[t.call]++
		arr, win := "-", "-"
		if as := byCall[t.call]; k < len(as) {
			at := as[k].At
			arr = fmt.Sprintf("%.1f", ms(at))
			win = fmt.Sprintf("%d+%03d", at.Unix()-base, at.Nanosecond()/1e6)
		}
		mark := ""
		if refusal(t.status) {
			mark = " <<<"
		}
		fmt.Fprintf(w, "%9.1f %9.1f %9s %8s %4d %3d %s%s\n", ms(t.sent), ms(t.recv), arr, win, t.call, t.status, t.headers, mark)
	}
}
