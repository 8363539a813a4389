package core

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A refused call whose retry comes back after its reserved place was given up
// — its retry layer's timer woke late, 50 ms past the pause's end, as
// resty's did over loopback on two loaded CPUs — still goes first: at the
// next turn, ahead of the callers who queued during the pause. (Before, it
// went behind all of them: over loopback ~1 s late, behind ~100.)
func TestLateRetryStillGoesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithBurst(1))
		start := time.Now()
		var mu sync.Mutex
		var order []string
		var at []time.Duration
		refused := false
		next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			order, at = append(order, r.URL.Path), append(at, time.Since(start))
			status, h := http.StatusOK, http.Header{}
			if r.URL.Path == "/refused" && !refused {
				refused, status = true, http.StatusTooManyRequests
				h.Set("Retry-After", "2")
			}
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
		})
		tr := NewTransport(next, b)
		if err := get(t, tr, context.Background(), "/refused"); err != nil { // refused: the pause, until 2 s
			t.Fatal(err)
		}
		time.Sleep(500 * ms)
		var wg sync.WaitGroup
		for _, p := range []string{"/q1", "/q2", "/q3", "/q4", "/q5"} { // callers who queue during the pause
			wg.Go(func() {
				if err := get(t, tr, context.Background(), p); err != nil {
					t.Error(err)
				}
			})
			time.Sleep(ms)
		}
		time.Sleep(time.Until(start.Add(2050 * ms))) // the place was held 20 ms past the pause's end
		if err := get(t, tr, context.Background(), "/refused"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		want := []string{"/refused", "/q1", "/refused", "/q2", "/q3", "/q4", "/q5"}
		if strings.Join(order, " ") != strings.Join(want, " ") || at[2] != 2120*ms {
			t.Errorf("sent %v at %v; want %v, the late retry at the next turn, 2.12s", order, at, want)
		}
	})
}
