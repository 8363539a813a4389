package resty_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgresty "github.com/headgate-go/headgate/resty"
)

// TestRetryMeetsPauseEndOverLoopback is TestRetryMeetsPauseEnd in real
// time, with resty's own transport over a real connection: the retry of
// the refused request and four other callers reach the server together, as
// the server's pause ends and not before. Bounds are generous (the server
// measures arrivals on its own clock). The pause is Retry-After: 2, a
// known pause (one whole second is a bracket the estimate may undercut).
func TestRetryMeetsPauseEndOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about two seconds")
	}
	s, err := quotatest.NewServer(quotatest.Config{Requests: 10, Period: time.Second})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	var w leakWatch
	b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(8), w.observer())
	c := hgresty.Use(resty.New().SetLogger(quietLogger{}).SetRetryCount(3), b)

	const pause = 2 * time.Second
	s.PauseFor(pause)
	var wg sync.WaitGroup
	wg.Go(func() {
		resp, err := c.R().Get(s.URL + "/first")
		if assert.NoError(t, err) {
			assert.Equal(t, http.StatusOK, resp.StatusCode())
			assert.Equal(t, 2, resp.Request.Attempt, "attempts")
		}
	})
	require.Eventually(t, func() bool { return b.PauseRemaining() > 0 }, pause/2, time.Millisecond,
		"the 429 pauses the budget")
	for range 4 {
		wg.Go(func() {
			resp, err := c.R().Get(s.URL + "/other")
			if assert.NoError(t, err) {
				assert.Equal(t, http.StatusOK, resp.StatusCode())
			}
		})
	}
	wg.Wait()

	firsts := arrivalsAt(s.Provider, "/first")
	require.Len(t, firsts, 2)
	require.Equal(t, quotatest.RefusedPause, firsts[0].Outcome)
	end := firsts[0].At.Add(pause) // the server's pause ends no earlier than this
	together := append(firsts[1:], arrivalsAt(s.Provider, "/other")...)
	require.Len(t, together, 5)
	lo, hi := together[0].At, together[0].At
	for _, a := range together {
		assert.Equal(t, quotatest.Admitted, a.Outcome)
		assert.False(t, a.At.Before(end), "an arrival %v before the pause ended", end.Sub(a.At))
		assert.Less(t, a.At.Sub(end), 300*time.Millisecond, "an arrival long after the pause ended")
		if a.At.Before(lo) {
			lo = a.At
		}
		if a.At.After(hi) {
			hi = a.At
		}
	}
	t.Logf("arrivals %v to %v after the pause end, retry at %v", lo.Sub(end), hi.Sub(end), firsts[1].At.Sub(end))
	assert.Less(t, hi.Sub(lo), 100*time.Millisecond, "the retry and the other callers resume together")
	assert.Equal(t, 1, s.Refused())
	w.assertNoSlots(t, b)
}
