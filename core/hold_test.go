package core

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// A probe's answer that reports more quota than the budget's burst lets
// go what the report says, but never more than the budget was told: the
// probe itself was one of the told burst. (fiber's sliding window, told
// half its rate, found it: the window's whole quota came back, and the
// burst went at once after the probe, one more than told.)
func TestProbeReleaseKeepsTheToldBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toYear2026()
		p, err := quotatest.New(quotatest.Config{Requests: 10, Period: time.Second, Algorithm: quotatest.FixedWindow,
			Headers: quotatest.XRateLimitDelta | quotatest.RetryAfterSeconds})
		if err != nil {
			t.Fatal(err)
		}
		// Another client spends the server's window first: the budget's
		// first call is refused, and a probe finds the next window whole.
		other := p.Client()
		for range 10 {
			resp, err := other.Get("http://quotatest.invalid/other")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		const burst, calls = 5, 20
		b, err := NewBudget(PerSecond(burst), WithBurst(burst))
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: NewTransport(p.Transport(), b)}
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				for range 6 {
					resp, err := hc.Get("http://quotatest.invalid/budget")
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return
					}
				}
				t.Error("a call was refused six times")
			})
		}
		wg.Wait()
		var times []time.Time
		refused := 0
		for _, a := range p.Arrivals() {
			if strings.HasPrefix(a.Path, "/budget") {
				times = append(times, a.At)
				if a.Status != http.StatusOK {
					refused++
				}
			}
		}
		if refused == 0 {
			t.Fatal("no call was refused: the scenario sent no probe")
		}
		if err := quotatest.CheckTimes(times, burst, time.Second/burst, 0); err != nil {
			t.Errorf("the budget sent faster than told: %v", err)
		}
	})
}
