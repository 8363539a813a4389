package retryablehttp_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoopbackRetriesEndWithThePause runs the real thing over loopback: a
// retryablehttp client with its default pooled net/http transport, four
// concurrent callers and a provider that pauses for two seconds
// (Retry-After: 2, a known pause; one whole second is a bracket the
// budget's estimate may undercut). Every retry and every held-back caller
// reaches the provider after its pause has ended (none is refused twice)
// and shortly after it, together; no slot is held at the end. Real time:
// the bounds are generous.
func TestLoopbackRetriesEndWithThePause(t *testing.T) {
	s, err := quotatest.NewServer(quotatest.Config{Requests: 10, Period: time.Second})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	b := core.MustBudget(core.PerSecond(20), core.WithMaxInFlight(4))
	c := retryablehttp.NewClient()
	c.Logger = nil
	hgretry.Use(c, b)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	const pause = 2 * time.Second
	pauseEnd := time.Now().Add(pause) // no later than the provider's
	s.PauseFor(pause)
	heard := make(chan struct{}) // closed once the budget has heard the pause
	go func() {
		defer close(heard)
		for b.PauseRemaining() == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if i > 0 {
				<-heard // held by the budget, not refused
			}
			status, err := get(ctx, c, s.URL+"/v1/items")
			assert.NoError(t, err)
			assert.Equal(t, 200, status)
		})
	}
	wg.Wait()

	var admitted []time.Time
	refused := 0
	for _, a := range s.Arrivals() {
		if a.Outcome == quotatest.Admitted {
			admitted = append(admitted, a.At)
		} else {
			refused++
		}
	}
	assert.Equal(t, 1, refused, "only the first caller reached the paused provider")
	require.Len(t, admitted, 4)
	for _, at := range admitted {
		assert.False(t, at.Before(pauseEnd), "admitted %v before the pause ended", pauseEnd.Sub(at))
		// Generous, for a loaded machine: the failure it guards against is
		// a second pause waited, or retryablehttp's own backoff.
		assert.Less(t, at.Sub(pauseEnd), 1500*time.Millisecond, "admitted long after the pause ended")
	}
	assert.Zero(t, b.InFlight(), "slots held")
}
