package gokit_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/ratelimit"
	"github.com/go-kit/kit/sd/lb"
	httptransport "github.com/go-kit/kit/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgkit "github.com/headgate-go/headgate/gokit"
)

// The delaying limiter paces sequential and concurrent calls of a real
// go-kit client endpoint at the budget's rate: the provider, enforcing the
// same limit, refuses nothing, and the arrivals fall exactly on the GCRA
// schedule.
func TestDelayingLimiterPacesCalls(t *testing.T) {
	t.Run("sequential", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
			b := core.MustBudget(core.PerSecond(5), core.WithMaxInFlight(2))
			items := delaying.build(b, p.Transport(), "/v1/items", decodeStatus)
			start := time.Now()
			for i := range 12 {
				resp, err := items(t.Context(), nil)
				require.NoError(t, err, "call %d", i)
				require.Equal(t, http.StatusOK, resp, "call %d", i)
			}
			for i, at := range arrivalTimes(p) {
				want := time.Duration(max(0, i-4)) * 200 * time.Millisecond
				assert.Equal(t, want, at.Sub(start), "arrival %d: burst of 5, then one every 200ms", i)
			}
			assert.Equal(t, 12, p.Count())
			assert.Zero(t, p.Refused())
			assert.Zero(t, b.InFlight())
		})
	})
	t.Run("concurrent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
			b := core.MustBudget(core.PerSecond(5), core.WithMaxInFlight(3))
			items := delaying.build(b, p.Transport(), "/v1/items", decodeStatus)
			start := time.Now()
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 5 {
						_, err := items(t.Context(), nil)
						assert.NoError(t, err)
					}
				})
			}
			wg.Wait()
			assert.Equal(t, 3*time.Second, time.Since(start), "20 calls: 5 at once, 15 more 200ms apart")
			assert.Equal(t, 20, p.Count())
			assert.Zero(t, p.Refused())
			assert.NoError(t, p.CheckPacing(5, 200*time.Millisecond, 0))
			assert.Zero(t, b.InFlight())
		})
	})
}

// A call whose wait for the server's pause would pass its deadline fails at
// once with core's own *core.RateLimitError, not a copy or a wrapper, and is
// never sent; a call cancelled while it waits returns the context's error;
// with a deadline after the pause, a call waits and is sent the instant the
// pause ends.
func TestDelayingLimiterHonoursDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
		b := core.MustBudget(core.PerSecond(100), core.WithMaxInFlight(1))
		items := delaying.build(b, p.Transport(), "/v1/items", decodeStatus)

		p.PauseFor(10 * time.Second)
		_, err := items(t.Context(), nil)
		var re *hgkit.ResponseError
		require.ErrorAs(t, err, &re)
		require.Equal(t, http.StatusTooManyRequests, re.StatusCode)

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err = items(ctx, nil)
		rl, ok := err.(*core.RateLimitError)
		require.True(t, ok, "err = %T %v, want core's *core.RateLimitError as is", err, err)
		assert.Equal(t, core.Paused, rl.Reason)
		assert.Equal(t, http.StatusTooManyRequests, rl.StatusCode)
		assert.Equal(t, 10*time.Second, rl.RetryAfter)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, time.Since(start), "failed at once, without waiting for the deadline")
		assert.Equal(t, 1, p.Count(), "the call was never sent")

		ctx, cancelWait := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancelWait)
		_, err = items(ctx, nil)
		assert.Same(t, context.Canceled, err, "cancelled while waiting: the context's error, as is")
		assert.Equal(t, time.Second, time.Since(start))

		ctx, cancel = context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		resp, err := items(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp)
		assert.Equal(t, 10*time.Second, time.Since(start), "sent when the pause ended")
		assert.Zero(t, b.InFlight())
	})
}

// The erroring limiter fails at once, and its error matches what go-kit
// users and headgate users test for: ErrLimited (go-kit's
// ratelimit.ErrLimited), core's *core.RateLimitError with the time until
// the next turn or the end of the pause, core.IsBudgetError. It does not
// pretend a deadline passed.
func TestErroringLimiterError(t *testing.T) {
	t.Run("paced", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Second})
			b := core.MustBudget(core.PerSecond(1), core.WithName("items"))
			items := erroring.build(b, p.Transport(), "/v1/items", decodeStatus)
			_, err := items(t.Context(), nil)
			require.NoError(t, err)

			start := time.Now()
			_, err = items(t.Context(), nil)
			require.Error(t, err)
			assert.Zero(t, time.Since(start), "failed at once")
			assert.ErrorIs(t, err, hgkit.ErrLimited)
			assert.ErrorIs(t, err, ratelimit.ErrLimited)
			var rl *core.RateLimitError
			require.ErrorAs(t, err, &rl)
			assert.Equal(t, core.Paced, rl.Reason)
			assert.Equal(t, time.Second, rl.RetryAfter)
			assert.Equal(t, "items", rl.Budget)
			assert.True(t, core.IsBudgetError(err))
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			assert.EqualError(t, err, "headgate: rate limit exceeded: budget items has its next turn in 1s (paced)")
			assert.Equal(t, 1, p.Count(), "the refused call was never sent")

			time.Sleep(rl.RetryAfter)
			_, err = items(t.Context(), nil)
			assert.NoError(t, err, "the turn RetryAfter promised is free")
			assert.Equal(t, 2, p.Count())
		})
	})
	t.Run("paused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
			b := core.MustBudget(core.PerSecond(100))
			items := erroring.build(b, p.Transport(), "/v1/items", decodeStatus)
			p.PauseFor(30 * time.Second)
			_, err := items(t.Context(), nil)
			var re *hgkit.ResponseError
			require.ErrorAs(t, err, &re)

			_, err = items(t.Context(), nil)
			assert.ErrorIs(t, err, hgkit.ErrLimited)
			var rl *core.RateLimitError
			require.ErrorAs(t, err, &rl)
			assert.Equal(t, core.Paused, rl.Reason)
			assert.Equal(t, http.StatusTooManyRequests, rl.StatusCode)
			assert.Equal(t, 30*time.Second, rl.RetryAfter)
			assert.EqualError(t, err, "headgate: rate limit exceeded: budget paused for 30s after status 429")
			assert.Equal(t, 1, p.Count())
		})
	})
	t.Run("every slot taken", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second, Latency: time.Second})
			b := core.MustBudget(core.PerSecond(100), core.WithMaxInFlight(1))
			items := erroring.build(b, p.Transport(), "/v1/items", decodeStatus)
			var wg sync.WaitGroup
			wg.Go(func() {
				_, err := items(t.Context(), nil)
				assert.NoError(t, err)
			})
			synctest.Wait() // the first call holds the only slot
			start := time.Now()
			_, err := items(t.Context(), nil)
			assert.LessOrEqual(t, time.Since(start), time.Millisecond, "failed within the try window")
			assert.ErrorIs(t, err, hgkit.ErrLimited)
			var rl *core.RateLimitError
			assert.False(t, errors.As(err, &rl), "no turn time to tell when the slots are full")
			assert.EqualError(t, err, "headgate: rate limit exceeded: every concurrency slot is taken")
			wg.Wait()
			assert.Equal(t, 1, p.Count())
			assert.Zero(t, b.InFlight())
		})
	})
	t.Run("context done", func(t *testing.T) {
		b := core.MustBudget(core.PerSecond(100))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := hgkit.NewErroringLimiter(b)(endpoint.Nop)(ctx, nil)
		assert.Same(t, context.Canceled, err, "the context's error, as is")
	})
}

// The erroring limiter lets through, without waiting, every call whose turn
// is free: the whole burst.
func TestErroringLimiterAdmitsFreeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 3, Period: time.Second})
		b := core.MustBudget(core.PerSecond(3))
		items := erroring.build(b, p.Transport(), "/v1/items", decodeStatus)
		start := time.Now()
		for i := range 3 {
			_, err := items(t.Context(), nil)
			require.NoError(t, err, "call %d of the burst", i)
		}
		_, err := items(t.Context(), nil)
		assert.ErrorIs(t, err, hgkit.ErrLimited)
		assert.Zero(t, time.Since(start))
		assert.Equal(t, 3, p.Count())
		assert.Zero(t, p.Refused())
	})
}

// A limiter frees the call's slot on every path out of the endpoint: a
// response, a refusal the decoder returned, a failed encode, a reset
// connection, a budget refusal and a panic.
func TestLimiterReleasesSlotOnEveryPath(t *testing.T) {
	for _, w := range []wiring{delaying, erroring} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1000, Period: time.Second})
				b := core.MustBudget(core.PerSecond(1000), core.WithMaxInFlight(1))
				items := w.build(b, p.Transport(), "/v1/items", decodeStatus)
				check := func(path string) {
					t.Helper()
					assert.Zero(t, b.InFlight(), "%s: a slot leaked", path)
				}

				_, err := items(t.Context(), nil)
				require.NoError(t, err)
				check("response")

				_, err = w.build(b, p.Transport(), "/v1/items", decodeFails)(t.Context(), nil)
				require.ErrorIs(t, err, errBadPayload)
				check("decoder error")

				p.ResetConnections(1)
				_, err = items(t.Context(), nil)
				require.Error(t, err)
				check("reset connection")

				badEncode := hgkit.NewDelayingLimiter(b)(func(context.Context, interface{}) (interface{}, error) {
					return nil, errors.New("encode failed")
				})
				_, err = badEncode(t.Context(), nil)
				require.Error(t, err)
				check("encode error")

				panicky := hgkit.NewDelayingLimiter(b)(func(context.Context, interface{}) (interface{}, error) {
					panic("boom")
				})
				assert.Panics(t, func() { panicky(t.Context(), nil) })
				check("panic")

				p.PauseFor(time.Minute)
				_, err = items(t.Context(), nil)
				require.Error(t, err)
				check("server refusal")
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				_, err = items(ctx, nil)
				require.True(t, core.IsBudgetError(err), "err = %v", err)
				check("budget refusal")
			})
		})
	}
}

// Many callers at once through both limiters, one of them outside lb.Retry
// so that concurrent tries share the call's permit, while the server pauses:
// no race, the cap holds at the provider, and every slot comes back.
func TestLimitersConcurrentSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 50, Period: time.Second, Latency: 5 * time.Millisecond})
		b := core.MustBudget(core.PerSecond(50), core.WithMaxInFlight(4))
		items := retrying(delaying.build(b, p.Transport(), "/v1/items", decodeStatus), time.Minute)
		orders := hgkit.NewDelayingLimiter(b)(retrying(newClient("/v1/orders", decodeStatus,
			httptransport.SetClient(&http.Client{Transport: p.Transport()}), hgkit.ClientFeedback(b)), time.Minute))
		search := erroring.build(b, p.Transport(), "/v1/search", decodeStatus)

		var wg sync.WaitGroup
		for i := range 12 {
			ep := []endpoint.Endpoint{items, orders, search}[i%3]
			wg.Go(func() {
				for range 8 {
					_, err := ep(t.Context(), nil)
					var re *hgkit.ResponseError
					if err != nil && !errors.Is(err, hgkit.ErrLimited) && !errors.As(err, &re) {
						var retryErr lb.RetryError
						assert.ErrorAs(t, err, &retryErr)
					}
				}
			})
		}
		time.Sleep(300 * time.Millisecond)
		p.PauseFor(time.Second)
		wg.Wait()
		assert.LessOrEqual(t, p.PeakInFlight(), 4)
		assert.Zero(t, b.InFlight())
	})
}

// pushbacks counts the Pushback events of a budget: one per response fed
// to it that asked for a pause.
type pushbacks struct{ n sync.Map }

func (p *pushbacks) option(name string) core.Option {
	return core.WithObserver(func(e core.Event) {
		if e.Reason == core.Pushback {
			v, _ := p.n.LoadOrStore(name, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		}
	})
}

func (p *pushbacks) count(name string) int {
	v, ok := p.n.Load(name)
	if !ok {
		return 0
	}
	return int(v.(*atomic.Int64).Load())
}

// A refusal that reached the budget through ClientFeedback is not fed to it
// a second time as the *ResponseError the decoder returns: one response,
// one pushback.
func TestLimiterFeedsOneResponseOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
		var pb pushbacks
		b := core.MustBudget(core.PerSecond(100), pb.option("b"))
		items := delaying.build(b, p.Transport(), "/v1/items", decodeStatus)
		p.PauseFor(3 * time.Second)
		_, err := items(t.Context(), nil)
		var re *hgkit.ResponseError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 1, p.Count())
		assert.Equal(t, 1, pb.count("b"), "pushbacks: the 429 reached the budget once")
	})
}

// Nested limiters on two budgets (an organisation's quota around an
// endpoint's), each with its ClientFeedback: the response reaches each
// budget once, through that budget's own permit, found up the chain of
// calls the context holds.
func TestNestedLimitersFeedEachBudgetOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
		var pb pushbacks
		org := core.MustBudget(core.PerSecond(100), pb.option("org"))
		ep := core.MustBudget(core.PerSecond(100), pb.option("endpoint"))
		client := newClient("/v1/items", decodeStatus,
			httptransport.SetClient(&http.Client{Transport: p.Transport()}),
			hgkit.ClientFeedback(org), hgkit.ClientFeedback(ep))
		items := hgkit.NewDelayingLimiter(org)(hgkit.NewDelayingLimiter(ep)(client))
		p.PauseFor(3 * time.Second)
		_, err := items(t.Context(), nil)
		var re *hgkit.ResponseError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 1, pb.count("org"), "pushbacks on the outer budget")
		assert.Equal(t, 1, pb.count("endpoint"), "pushbacks on the inner budget")
		assert.Equal(t, 3*time.Second, org.PauseRemaining())
		assert.Equal(t, 3*time.Second, ep.PauseRemaining())
	})
}
