package gokit_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/sd"
	"github.com/go-kit/kit/sd/lb"
	httptransport "github.com/go-kit/kit/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgkit "github.com/headgate-go/headgate/gokit"
)

// A pause one endpoint's 429 asked for holds back every endpoint spending
// from the same budget, whichever way the budget is wired: nothing reaches
// the provider until the pause ends, and everything waiting goes then.
func TestServerPauseHonouredByEveryEndpoint(t *testing.T) {
	for _, w := range []wiring{setClient, delaying, decoderOnly} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
				b := core.MustBudget(core.PerSecond(100), core.WithMaxInFlight(4))
				items := w.build(b, p.Transport(), "/v1/items", decodeStatus)
				orders := w.build(b, p.Transport(), "/v1/orders", decodeStatus)

				start := time.Now()
				p.PauseFor(2 * time.Second)
				_, err := items(t.Context(), nil)
				var re *hgkit.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 2*time.Second, b.PauseRemaining(), "the 429 reached the budget")

				var wg sync.WaitGroup
				for _, ep := range []endpoint.Endpoint{orders, orders, items, orders} {
					wg.Go(func() {
						resp, err := ep(t.Context(), nil)
						assert.NoError(t, err)
						assert.Equal(t, http.StatusOK, resp)
					})
				}
				wg.Wait()
				arrivals := p.Arrivals()
				require.Len(t, arrivals, 5)
				assert.Equal(t, 2*time.Second, arrivals[1].At.Sub(start), "%s sent the instant the pause ended", arrivals[1].Path)
				for _, a := range arrivals[1:] {
					// How fast the rest follow is the budget's pace after a pause.
					assert.GreaterOrEqual(t, a.At.Sub(start), 2*time.Second, "%s held back until the pause ended", a.Path)
					assert.Equal(t, quotatest.Admitted, a.Outcome)
				}
				assert.Equal(t, 1, p.Refused())
				assert.Zero(t, b.InFlight())
			})
		})
	}
}

// In the recommended wiring, and in the limiter wiring, a call spends
// exactly one turn per request the provider receives: counted by the
// budget's store, which grants every turn. A retried call spends one turn
// per try. The last case shows why the docs say never to combine the
// two wirings on one budget.
func TestOneTurnPerCall(t *testing.T) {
	for _, w := range []wiring{setClient, delaying, erroring} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
				turns := newTurnCounter()
				b := core.MustBudget(core.PerSecond(10), core.WithStore(turns), core.WithMaxInFlight(2))
				items := w.build(b, p.Transport(), "/v1/items", decodeStatus)
				for i := range 10 {
					_, err := items(t.Context(), nil)
					require.NoError(t, err, "call %d", i)
				}
				assert.Equal(t, 10, p.Count())
				assert.Equal(t, int64(10), turns.turns.Load(), "turns spent for 10 calls")
				assert.Zero(t, b.InFlight())
			})
		})
	}
	for _, w := range []wiring{setClient, delaying} {
		t.Run(w.name+" under lb.Retry", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
				turns := newTurnCounter()
				b := core.MustBudget(core.PerSecond(10), core.WithStore(turns))
				items := w.build(b, p.Transport(), "/v1/items", decodeStatus)
				retry := lb.RetryWithCallback(time.Minute, lb.NewRoundRobin(sd.FixedEndpointer{items}), hgkit.RetryCallback(3))
				p.PauseFor(2 * time.Second) // Retry-After: 2, a known pause (one whole second is a bracket)
				_, err := retry(t.Context(), nil)
				require.NoError(t, err)
				assert.Equal(t, 2, p.Count(), "a refused try and a successful one")
				assert.Equal(t, int64(2), turns.turns.Load())
			})
		})
	}
	t.Run("limiter over SetClient spends two: do not combine", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
			turns := newTurnCounter()
			b := core.MustBudget(core.PerSecond(10), core.WithStore(turns))
			items := hgkit.NewDelayingLimiter(b)(setClient.build(b, p.Transport(), "/v1/items", decodeStatus))
			for range 5 {
				_, err := items(t.Context(), nil)
				require.NoError(t, err)
			}
			assert.Equal(t, 5, p.Count())
			assert.Equal(t, int64(10), turns.turns.Load())
		})
	})
}

// With httptransport.BufferedStream the caller owns the body. Under
// SetClient the body holds its slot until the caller closes it; under a
// limiter the slot is freed when the endpoint returns. On every path no
// slot and no body is left open: when the decoder fails, go-kit never
// closes a buffered body, and the adapter does.
func TestBufferedStreamLeaksNoSlot(t *testing.T) {
	for _, tc := range []struct {
		w           wiring
		holdsStream bool // the open stream holds its slot
	}{{setClient, true}, {delaying, false}, {erroring, false}} {
		t.Run(tc.w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1000, Period: time.Second, BodySize: 100 << 10})
				b := core.MustBudget(core.PerSecond(1000), core.WithMaxInFlight(2))
				bodies := trackBodies(p.Transport())
				buffered := httptransport.BufferedStream(true)
				stream := tc.w.build(b, bodies, "/v1/export", decodeStream, buffered)

				resp, err := stream(t.Context(), nil)
				require.NoError(t, err)
				body := resp.(io.ReadCloser)
				if tc.holdsStream {
					assert.Equal(t, 1, b.InFlight(), "the open stream holds its slot")
				} else {
					assert.Zero(t, b.InFlight())
				}
				n, err := io.Copy(io.Discard, io.LimitReader(body, 10<<10))
				require.NoError(t, err)
				require.EqualValues(t, 10<<10, n)
				require.NoError(t, body.Close(), "closed before the end")
				assert.Zero(t, b.InFlight(), "stream closed")

				_, err = tc.w.build(b, bodies, "/v1/export", decodeFails, buffered)(t.Context(), nil)
				require.ErrorIs(t, err, errBadPayload)
				assert.Zero(t, b.InFlight(), "decoder error: the body go-kit left open was closed")

				p.ResetConnections(1)
				_, err = stream(t.Context(), nil)
				require.Error(t, err)
				assert.Zero(t, b.InFlight(), "reset connection")

				p.PauseFor(time.Second)
				_, err = stream(t.Context(), nil)
				var re *hgkit.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Zero(t, b.InFlight(), "refusal")

				// The server's pause (Retry-After: 1), not b.PauseRemaining(): a
				// refusal of the budget's first burst naming a second or less is
				// a near miss it probes after one turn (core, issue 14), and the
				// erroring limiter does not wait.
				time.Sleep(time.Second)
				resp, err = stream(t.Context(), nil)
				require.NoError(t, err, "after the pause")
				require.NoError(t, resp.(io.ReadCloser).Close())
				assert.Zero(t, b.InFlight())
				assert.Zero(t, bodies.Open(), "every response body was closed")
			})
		})
	}
}

// The same over loopback, with a real net/http transport and connection
// reuse: many concurrent streams, some failing to decode, leave no slot and
// no connection in use.
func TestBufferedStreamLoopback(t *testing.T) {
	s, err := quotatest.NewServer(quotatest.Config{Requests: 1000, Period: time.Second, BodySize: 64 << 10})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	b := core.MustBudget(core.PerSecond(500), core.WithMaxInFlight(4))
	opts := []httptransport.ClientOption{hgkit.SetClient(s.Client(), b), httptransport.BufferedStream(true)}
	u := mustURL(t, s.URL+"/v1/export")
	stream := httptransport.NewClient(http.MethodGet, u, encodeNothing, decodeStream, opts...).Endpoint()
	broken := httptransport.NewClient(http.MethodGet, u, encodeNothing, decodeFails, opts...).Endpoint()

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a leaked slot fails here, not at the test's timeout
	defer cancel()
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			if i%3 == 0 {
				_, err := broken(ctx, nil)
				assert.ErrorIs(t, err, errBadPayload)
				return
			}
			resp, err := stream(ctx, nil)
			if !assert.NoError(t, err) {
				return
			}
			body := resp.(io.ReadCloser)
			_, err = io.Copy(io.Discard, body)
			assert.NoError(t, err)
			assert.NoError(t, body.Close())
		})
	}
	wg.Wait()
	assert.Zero(t, b.InFlight())
	assert.Equal(t, 24, s.Count())
	assert.Zero(t, s.Refused())
	assert.LessOrEqual(t, s.PeakInFlight(), 4, "the cap held over the network")
}

// SetClient and ClientFeedback feed every response to the budget, also one
// the decoder takes for a success: a decoder that never looks at the status
// still lets a 429 pause the budget.
func TestEveryResponseReachesTheBudget(t *testing.T) {
	feedbackOnly := wiring{"ClientFeedback", func(b *core.Budget, rt http.RoundTripper, path string, dec httptransport.DecodeResponseFunc, opts ...httptransport.ClientOption) endpoint.Endpoint {
		opts = append([]httptransport.ClientOption{httptransport.SetClient(&http.Client{Transport: rt}), hgkit.ClientFeedback(b)}, opts...)
		return newClient(path, dec, opts...)
	}}
	decodeAny := func(_ context.Context, resp *http.Response) (interface{}, error) {
		_, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	for _, w := range []wiring{setClient, delaying, erroring, feedbackOnly} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
				b := core.MustBudget(core.PerSecond(100))
				items := w.build(b, p.Transport(), "/v1/items", decodeAny)
				p.PauseFor(3 * time.Second)
				resp, err := items(t.Context(), nil)
				require.NoError(t, err)
				assert.Equal(t, http.StatusTooManyRequests, resp)
				assert.Equal(t, 3*time.Second, b.PauseRemaining())
			})
		})
	}
}

// ClientFeedback feeds every response to the budget, with the time its
// request left: a server pause refusing a burst applies at once, and cuts
// nothing, in memory or on a store. Without a limiter the send time comes
// from the ClientBefore; with one, from the call's permit.
func TestClientFeedbackPausesABurstWithoutACut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store bool // the budget keeps its state in a core.MemoryStore
		build func(b *core.Budget, rt http.RoundTripper) endpoint.Endpoint
	}{
		{"without a limiter", false, func(b *core.Budget, rt http.RoundTripper) endpoint.Endpoint {
			return newClient("/v1/items", decodeStatus, httptransport.SetClient(&http.Client{Transport: rt}), hgkit.ClientFeedback(b))
		}},
		{"with a limiter", false, func(b *core.Budget, rt http.RoundTripper) endpoint.Endpoint {
			return delaying.build(b, rt, "/v1/items", decodeStatus)
		}},
		// A budget on a store cannot place a send time from the process's
		// clock on the store's; the permit knows it on the store's clock.
		{"with a limiter, on a store", true, func(b *core.Budget, rt http.RoundTripper) endpoint.Endpoint {
			return delaying.build(b, rt, "/v1/items", decodeStatus)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second, Latency: 10 * time.Millisecond})
				var opts []core.Option
				if tc.store {
					opts = append(opts, core.WithStore(core.NewMemoryStore()))
				}
				b := core.MustBudget(core.PerSecond(10), opts...)
				items := tc.build(b, p.Transport())
				p.PauseFor(2 * time.Second)
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(func() {
						_, err := items(t.Context(), nil)
						var re *hgkit.ResponseError
						assert.ErrorAs(t, err, &re)
					})
				}
				wg.Wait()
				assert.Equal(t, 3, p.Refused())
				assert.Equal(t, 2*time.Second, b.PauseRemaining(), "the pause applies at once")
				// Refusals that only say "pause" (the quota is whole after it)
				// do not cut the pace, in memory or on a store (core, issue 14);
				// a store's once-per-burst cut of a refusal that shows the pace
				// too fast, by the permits' send times on the store's clock, is
				// core's TestStoreBudgetObservePlacesSendTimesOnTheStoresClock.
				assert.Equal(t, core.PerSecond(10), b.EffectiveRate(), "a pause is no cut")
			})
		})
	}
}

// SetClient keeps the user's client settings, leaves the user's client
// untouched, and passes lanes to the budget's transport.
func TestSetClientKeepsClientAndLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
		b := core.MustBudget(core.PerSecond(100))
		exports := core.MustBudget(core.PerSecond(100))
		user := &http.Client{Transport: p.Transport(), Timeout: time.Second}
		opt := hgkit.SetClient(user, b, core.WithLane("/exports", exports))
		assert.Equal(t, p.Transport(), user.Transport, "the user's client is not modified")
		export := newClient("/v2/exports/orders.csv", decodeStatus, opt)
		items := newClient("/v1/items", decodeStatus, opt)

		p.PauseFor(5 * time.Second)
		_, err := export(t.Context(), nil)
		var re *hgkit.ResponseError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 5*time.Second, exports.PauseRemaining(), "the lane's budget heard the 429")
		assert.Zero(t, b.PauseRemaining(), "the default budget did not")

		start := time.Now()
		_, err = export(t.Context(), nil)
		assert.True(t, core.IsBudgetError(err), "err = %v: the client's 1s Timeout is the deadline", err)
		assert.Zero(t, time.Since(start))

		_, err = items(t.Context(), nil)
		require.ErrorAs(t, err, &re, "the default budget sent it")
		assert.Equal(t, 2, p.Count())
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// SetClient's nil handling and its guard: a nil client is a zero
// http.Client; a nil budget, or a client already sending through a
// transport on the same budget, panics with the package's name.
func TestSetClientNilAndTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := core.MustBudget(core.PerSecond(100))
		assert.PanicsWithValue(t, "hgkit: SetClient needs a budget (core.Disabled() for none)", func() { hgkit.SetClient(nil, nil) })
		assert.PanicsWithValue(t, "hgkit: ClientFeedback needs a budget (core.Disabled() for none)", func() { hgkit.ClientFeedback(nil) })
		assert.PanicsWithValue(t, "hgkit: NewDelayingLimiter needs a budget (core.Disabled() for none)", func() { hgkit.NewDelayingLimiter(nil) })
		assert.PanicsWithValue(t, "hgkit: NewErroringLimiter needs a budget (core.Disabled() for none)", func() { hgkit.NewErroringLimiter(nil) })
		wrapped := &http.Client{Transport: core.NewTransport(nil, b)}
		assert.PanicsWithValue(t, "hgkit: SetClient: the client already sends through a transport on this budget (every request would take two turns)",
			func() { hgkit.SetClient(wrapped, b) })
		assert.NotPanics(t, func() { hgkit.SetClient(wrapped, core.MustBudget(core.PerSecond(1))) }, "a second budget stacks")

	})
}

// SetClient(nil, b) sends through a zero http.Client (http.DefaultTransport)
// under the budget: a request to a loopback port nobody listens on spends
// one turn and fails with the dial's error.
func TestSetClientNilClient(t *testing.T) {
	store := newTurnCounter()
	b := core.MustBudget(core.PerSecond(100), core.WithStore(store))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close() // nobody listens there now
	u, err := url.Parse("http://" + addr + "/v1/items")
	require.NoError(t, err)
	items := httptransport.NewClient(http.MethodGet, u, encodeNothing, decodeStatus, hgkit.SetClient(nil, b)).Endpoint()
	_, err = items(t.Context(), nil)
	var ue *url.Error
	require.ErrorAs(t, err, &ue, "the http.Client's error")
	assert.False(t, core.IsBudgetError(err))
	assert.Equal(t, int64(1), store.turns.Load(), "turns spent: the request went through the budget")
}
