package core

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkTransport compares a GET over loopback through a bare
// http.Transport with the same GET through the budget's Transport (with and
// without a concurrency cap): the difference is the transport's own
// overhead per request. The budget never waits here.
func BenchmarkTransport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4999")
		w.Header().Set("X-RateLimit-Limit", "5000")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	run := func(b *testing.B, rt http.RoundTripper) {
		c := &http.Client{Transport: rt}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(srv.URL + "/v1/items")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	fast := Rate{1_000_000_000, time.Second}
	b.Run("bare", func(b *testing.B) { run(b, &http.Transport{}) })
	b.Run("headgate", func(b *testing.B) { run(b, NewTransport(&http.Transport{}, MustBudget(fast))) })
	b.Run("headgate-capped", func(b *testing.B) {
		run(b, NewTransport(&http.Transport{}, MustBudget(fast, WithMaxInFlight(8))))
	})
}
