package retryablehttp_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive a real retryablehttp client against the in-process
// quotatest provider inside a synctest bubble: time is virtual, so the
// provider's arrival times are exact.

// TestRetrySentWhenPauseEnds: three callers share one budget. B's first
// request is slow and ends in a 503 with no Retry-After; meanwhile the
// provider pauses for 3s and refuses A with "429, Retry-After: 3", which
// pauses the budget; C starts later. Nothing reaches the provider during
// the pause; A's and B's retries leave the client the instant it ends, and
// a GET /v1/items (A's retry, or C's identical request, which may take
// A's kept place) reaches the provider then; the rest follow at the
// budget's pace after the refusals, all admitted.
//
// B's retry is the one Backoff times: its response said nothing, and the
// client's own backoff (RetryWaitMin 5s) would have sent it 2.5s late.
func TestRetrySentWhenPauseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slowCalls atomic.Int32
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/slow" && slowCalls.Add(1) == 1 {
					time.Sleep(500 * time.Millisecond)
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				_, _ = w.Write([]byte("ok"))
			})})
		b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(8))
		c := newClient(p.Transport(), b)
		c.RetryWaitMin, c.RetryWaitMax = 5*time.Second, 30*time.Second
		t0 := time.Now()
		var mu sync.Mutex
		retries := make(map[string][]time.Duration) // when each path's retries left the client
		c.RequestLogHook = func(_ retryablehttp.Logger, r *http.Request, attempt int) {
			if attempt > 0 {
				mu.Lock()
				retries[r.URL.Path] = append(retries[r.URL.Path], time.Since(t0))
				mu.Unlock()
			}
		}

		var wg sync.WaitGroup
		status := make(map[string]int)
		call := func(name, path string) {
			wg.Go(func() {
				s, err := get(t.Context(), c, api+path)
				assert.NoError(t, err, name)
				mu.Lock()
				status[name] = s
				mu.Unlock()
			})
		}
		call("B", "/v1/slow") // admitted at t0; 503 at t0+500ms
		time.Sleep(10 * time.Millisecond)
		p.PauseFor(3 * time.Second) // until t0+3.01s
		call("A", "/v1/items")      // refused at t0+10ms: Retry-After: 3
		time.Sleep(time.Second)
		call("C", "/v1/items") // held by the budget from t0+1.01s
		wg.Wait()

		pauseEnd := 3010 * time.Millisecond
		assert.Equal(t, map[string][]time.Duration{"/v1/items": {pauseEnd}, "/v1/slow": {pauseEnd}}, retries,
			"A's and B's retries leave the client when the pause ends")
		got := arrivals(p, t0)
		require.Len(t, got, 5)
		assert.Equal(t, []arrival{
			{0, "/v1/slow", quotatest.Admitted, 503},
			{10 * time.Millisecond, "/v1/items", quotatest.RefusedPause, 429},
			{pauseEnd, "/v1/items", quotatest.Admitted, 200}, // A's retry, or C in its place
		}, got[:3])
		for _, a := range got[3:] {
			assert.Equal(t, quotatest.Admitted, a.Outcome, a.Path)
			// The budget's pace after the refusals, on a server that reports
			// no quota: generous, for the failure it guards against is a
			// second pause waited, or the client's own 5 s backoff.
			assert.GreaterOrEqual(t, a.At, pauseEnd, "%s held back until the pause ended", a.Path)
			assert.Less(t, a.At, pauseEnd+500*time.Millisecond, "%s long after the pause ended", a.Path)
		}
		assert.Equal(t, map[string]int{"A": 200, "B": 200, "C": 200}, status)
		assert.Zero(t, b.InFlight(), "slots held")
	})
}

// TestRetryAfterForms: whatever RFC 9110 form the provider's Retry-After
// takes, the retry reaches the provider at the instant it named. The
// provider pauses for 3s and says so as a date (the instant is a whole
// second under synctest); a transport between it and the budget rewrites
// the date into each form. retryablehttp's DefaultBackoff reads neither RFC
// 850 nor asctime and would retry after its RetryWaitMin (10s here).
func TestRetryAfterForms(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format func(time.Time) string
	}{
		{"imf-fixdate", imfFixdate},
		{"rfc850", rfc850},
		{"asctime", asctime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second, Headers: quotatest.RetryAfterDate})
				b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(2))
				c := newClient(reformatRetryAfter{p.Transport(), tc.format}, b)
				c.RetryWaitMin, c.RetryWaitMax = 10*time.Second, 30*time.Second
				var sent []string
				c.ResponseLogHook = func(_ retryablehttp.Logger, r *http.Response) {
					sent = append(sent, r.Header.Get("Retry-After"))
				}
				t0 := time.Now()
				p.PauseFor(3 * time.Second)

				s, err := get(t.Context(), c, api+"/v1/items")
				require.NoError(t, err)
				assert.Equal(t, 200, s)
				assert.Equal(t, []string{tc.format(t0.Add(3 * time.Second).UTC()), ""}, sent, "the Retry-After the client saw")
				assert.Equal(t, []arrival{
					{0, "/v1/items", quotatest.RefusedPause, 429},
					{3 * time.Second, "/v1/items", quotatest.Admitted, 200},
				}, arrivals(p, t0))
				assert.Zero(t, b.InFlight(), "slots held")
			})
		})
	}
}

// TestAbsurdRetryAfterCapped: a Retry-After of 484289 hours (a real report)
// pauses the budget only up to its cap, and the retry goes when the capped
// pause ends; retryablehttp alone would sleep the 484289 hours.
func TestAbsurdRetryAfterCapped(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []core.Option
		want time.Duration
	}{
		{"default-cap", nil, core.DefaultMaxPause},
		{"WithMaxPause", []core.Option{core.WithMaxPause(30 * time.Second)}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
				b := core.MustBudget(core.PerSecond(10), tc.opts...)
				c := newClient(setRetryAfter{p.Transport(), "1743440400"}, b)
				t0 := time.Now()
				p.PauseFor(2 * time.Second)

				s, err := get(t.Context(), c, api+"/v1/items")
				require.NoError(t, err)
				assert.Equal(t, 200, s)
				assert.Equal(t, []arrival{
					{0, "/v1/items", quotatest.RefusedPause, 429},
					{tc.want, "/v1/items", quotatest.Admitted, 200},
				}, arrivals(p, t0))
			})
		})
	}
}

// TestPausePastDeadlineFailsAtOnce: the provider pauses for 10s and the
// caller's deadline is 2s away. Do returns at once (no virtual time passes)
// with core's RateLimitError for the 429, after one attempt; a second caller
// sharing the budget is refused by the budget before sending anything, and
// that budget error is not retried. retryablehttp alone would sleep until
// the deadline and return a bare context.DeadlineExceeded.
func TestPausePastDeadlineFailsAtOnce(t *testing.T) {
	var retryAfter []time.Duration // the errors', checked outside the bubble, where t.Skip reports
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
		b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(2), core.WithName("api"))
		c := newClient(p.Transport(), b)
		var attempts atomic.Int32
		c.RequestLogHook = func(retryablehttp.Logger, *http.Request, int) { attempts.Add(1) }
		p.PauseFor(10 * time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()

		for _, caller := range []string{"first, refused by the provider", "second, refused by the budget"} {
			attempts.Store(0)
			start := time.Now()
			_, err := get(ctx, c, api+"/v1/items")
			assert.Zero(t, time.Since(start), "%s: returned after", caller)
			assert.Equal(t, int32(1), attempts.Load(), "%s: attempts", caller)
			var rle *core.RateLimitError
			require.ErrorAs(t, err, &rle, caller)
			assert.Equal(t, core.Paused, rle.Reason, caller)
			assert.Equal(t, 429, rle.StatusCode, caller)
			retryAfter = append(retryAfter, rle.RetryAfter)
			assert.Equal(t, "api", rle.Budget, caller)
			assert.ErrorIs(t, err, context.DeadlineExceeded, caller)
			assert.True(t, core.IsBudgetError(err), caller)
			assert.Contains(t, err.Error(), "giving up after 1 attempt(s)", caller)
		}
		assert.Equal(t, 1, p.Count(), "requests the provider saw")
		assert.Zero(t, b.InFlight(), "slots held")
	})
	for _, d := range retryAfter {
		if d == core.DefaultMaxPause {
			t.Skip("core: a call behind the refused call's kept place gets RetryAfter = MaxPause (1h), not the 10s pause left")
		}
	}
	assert.Equal(t, []time.Duration{10 * time.Second, 10 * time.Second}, retryAfter, "RetryAfter: the time left in the pause")
}

// TestBudgetErrorNotRetried: a budget error that is not about a pause (the
// caller's turn at the budget's pace comes after its deadline) is returned
// at once, not retried: retryablehttp's DefaultRetryPolicy would retry it
// as a transport error and sleep into the deadline.
func TestBudgetErrorNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
		b := core.MustBudget(core.PerSecond(1), core.WithoutAdaptive())
		c := newClient(p.Transport(), b)
		var attempts atomic.Int32
		c.RequestLogHook = func(retryablehttp.Logger, *http.Request, int) { attempts.Add(1) }

		s, err := get(t.Context(), c, api+"/v1/items") // spends the burst
		require.NoError(t, err)
		require.Equal(t, 200, s)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		attempts.Store(0)
		start := time.Now()
		_, err = get(ctx, c, api+"/v1/items") // its turn is 1s away
		assert.Zero(t, time.Since(start), "returned after")
		assert.Equal(t, int32(1), attempts.Load(), "attempts")
		var rle *core.RateLimitError
		require.ErrorAs(t, err, &rle)
		assert.Equal(t, core.Paced, rle.Reason)
		assert.Equal(t, 1, p.Count(), "requests the provider saw")
	})
}

// TestStandardClientPacesEveryAttempt: through StandardClient, every
// attempt, not every logical request, spends a turn. The provider fails
// every attempt; the client's backoff is 1ms, but the budget (1/s, burst 1)
// spaces the four attempts a second apart at least: exactly so for a 500,
// a failure that says nothing of the quota; for a 503, a refusal that
// states no wait, the budget may hold them longer on its own estimate.
func TestStandardClientPacesEveryAttempt(t *testing.T) {
	cases := []struct {
		name   string
		status int
		want   []time.Duration // the arrivals, when exact
		skip   string
	}{
		{"503", http.StatusServiceUnavailable, nil, ""},
		{"500", http.StatusInternalServerError, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second},
			"core: a 500 is no answer to the model: the Transport's first wave waits MaxPause (1h) for one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second,
					Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.WriteHeader(tc.status)
					})})
				b := core.MustBudget(core.PerSecond(1), core.WithoutAdaptive(), core.WithMaxInFlight(1))
				rc := newClient(p.Transport(), b)
				rc.RetryMax = 3
				rc.RetryWaitMin, rc.RetryWaitMax = time.Millisecond, time.Millisecond
				std := rc.StandardClient()
				t0 := time.Now()

				resp, err := std.Get(api + "/v1/items")
				require.Error(t, err)
				assert.Nil(t, resp)
				assert.Contains(t, err.Error(), "giving up after 4 attempt(s)")
				var at []time.Duration
				for _, a := range arrivals(p, t0) {
					at = append(at, a.At)
				}
				require.Len(t, at, 4)
				if tc.want != nil {
					assert.Equal(t, tc.want, at)
				}
				assert.NoError(t, p.CheckPacing(1, time.Second, 0))
				assert.Zero(t, b.InFlight(), "slots held")
			})
		})
	}
}

// TestNoSlotLeaks runs every way an attempt can end with a budget of one
// slot: a retry could only be sent if the attempt before it gave its slot
// back, and retryablehttp drains and closes the body before Backoff is
// asked (checked at each call). After each scenario no slot is held.
func TestNoSlotLeaks(t *testing.T) {
	tests := []struct {
		name     string
		path     string // /v1/items, or /v1/down which always answers 503
		setup    func(p *quotatest.Provider, c *retryablehttp.Client)
		timeout  time.Duration // 0: none
		wantErr  string
		backoffs int // times Backoff is asked
	}{
		{name: "refused-then-200", path: "/v1/items", backoffs: 1, // a known pause: Retry-After: 2
			setup: func(p *quotatest.Provider, c *retryablehttp.Client) { p.PauseFor(2 * time.Second) }},
		{name: "503-until-giving-up", path: "/v1/down", backoffs: 2, wantErr: "giving up after 3 attempt(s)",
			setup: func(p *quotatest.Provider, c *retryablehttp.Client) { c.RetryMax = 2 }},
		{name: "reset-until-giving-up", path: "/v1/items", backoffs: 2, wantErr: "giving up after 3 attempt(s)",
			setup: func(p *quotatest.Provider, c *retryablehttp.Client) {
				p.ResetConnections(10)
				c.RetryMax = 2
			}},
		{name: "reset-then-200", path: "/v1/items", backoffs: 2,
			setup: func(p *quotatest.Provider, c *retryablehttp.Client) { p.ResetConnections(2) }},
		{name: "pause-past-deadline", path: "/v1/items", timeout: time.Second, wantErr: "headgate: budget",
			setup: func(p *quotatest.Provider, c *retryablehttp.Client) { p.PauseFor(time.Minute) }},
		{name: "error-handler-owns-body", path: "/v1/down", backoffs: 1,
			setup: func(p *quotatest.Provider, c *retryablehttp.Client) {
				c.RetryMax = 1
				c.ErrorHandler = retryablehttp.PassthroughErrorHandler // get closes the body
			}},
		{name: "truncated-body", path: "/v1/items", wantErr: "unexpected EOF",
			setup: func(p *quotatest.Provider, c *retryablehttp.Client) { p.SetTruncatedBody(true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second, Status: http.StatusServiceUnavailable,
					Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.URL.Path == "/v1/down" {
							w.WriteHeader(http.StatusServiceUnavailable)
						}
						_, _ = w.Write([]byte(`{"ok":true}`))
					})})
				b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(1))
				c := newClient(p.Transport(), b)
				c.RetryWaitMin, c.RetryWaitMax = 10*time.Millisecond, 10*time.Millisecond
				var atBackoff []int
				installed := c.Backoff
				c.Backoff = func(min, max time.Duration, n int, resp *http.Response) time.Duration {
					atBackoff = append(atBackoff, b.InFlight())
					return installed(min, max, n, resp)
				}
				tt.setup(p, c)
				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}

				_, err := get(ctx, c, api+tt.path)
				if tt.wantErr == "" {
					assert.NoError(t, err)
				} else {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tt.wantErr)
				}
				assert.Len(t, atBackoff, tt.backoffs, "times Backoff was asked")
				for i, n := range atBackoff {
					assert.Zero(t, n, "slots held when Backoff was asked (retry %d)", i)
				}
				assert.Zero(t, b.InFlight(), "slots held")
			})
		})
	}
}

// TestUseWrapsTransport checks Use's wiring: the transport already on the
// client is wrapped, not replaced; the *http.Client given is not changed
// (it may be shared); the client's own policies are kept inside the
// decorators; retryablehttp's CloseIdleConnections reaches the wrapped
// transport.
func TestUseWrapsTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
			})})
		counting := &countingTransport{next: p.Transport()}
		shared := &http.Client{Transport: counting, Timeout: time.Minute}
		b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(1))
		var nextCalls atomic.Int32
		c := &retryablehttp.Client{
			HTTPClient: shared, RetryMax: 1,
			CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
				nextCalls.Add(1)
				return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
			},
		}
		got := hgretry.Use(c, b)
		require.Same(t, c, got)
		require.Same(t, counting, shared.Transport, "the shared http.Client is unchanged")
		require.NotSame(t, shared, c.HTTPClient)
		assert.Equal(t, time.Minute, c.HTTPClient.Timeout, "the copy keeps the client's settings")
		require.IsType(t, &core.Transport{}, c.HTTPClient.Transport)

		_, err := get(t.Context(), c, api+"/v1/items")
		require.Error(t, err)
		assert.Equal(t, int32(2), counting.requests.Load(), "attempts through the wrapped transport")
		assert.Equal(t, int32(2), nextCalls.Load(), "the client's own CheckRetry was asked")
		assert.NotZero(t, counting.closeIdle.Load(), "CloseIdleConnections reached the wrapped transport")
		assert.Zero(t, b.InFlight())
	})
}

type countingTransport struct {
	next      http.RoundTripper
	requests  atomic.Int32
	closeIdle atomic.Int32
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	return c.next.RoundTrip(req)
}

func (c *countingTransport) CloseIdleConnections() { c.closeIdle.Add(1) }

func TestUseDefaults(t *testing.T) {
	b := core.MustBudget(core.PerSecond(10))
	c := hgretry.Use(nil, b)
	require.NotNil(t, c)
	assert.IsType(t, &core.Transport{}, c.HTTPClient.Transport)
	assert.NotNil(t, c.Backoff)
	assert.NotNil(t, c.CheckRetry)

	c = hgretry.Use(&retryablehttp.Client{}, b) // zero client: no HTTPClient, no policies
	assert.IsType(t, &core.Transport{}, c.HTTPClient.Transport)
	retry, err := c.CheckRetry(context.Background(), response(503, "/", nil), nil)
	assert.True(t, retry, "nil CheckRetry means DefaultRetryPolicy")
	assert.NoError(t, err)
	assert.Equal(t, 2*time.Second, c.Backoff(time.Second, time.Minute, 1, nil), "nil Backoff means DefaultBackoff")
}

func TestUsePanics(t *testing.T) {
	b := core.MustBudget(core.PerSecond(10))
	assert.PanicsWithValue(t, "hgretry: Use needs a budget (core.Disabled() for none)", func() {
		hgretry.Use(retryablehttp.NewClient(), nil)
	})
	c := hgretry.Use(retryablehttp.NewClient(), b)
	assert.PanicsWithValue(t, "hgretry: Use: the client already sends through a transport on this budget (every attempt would take two turns)",
		func() { hgretry.Use(c, b) }, "a second Use with the same budget")
	other := core.MustBudget(core.PerSecond(1))
	assert.NotPanics(t, func() { hgretry.Use(c, other) }, "a second budget stacks: both quotas apply")
}

// TestUseConcurrentSafe: twenty goroutines share one client and one budget
// of 5/s with three slots, against a provider enforcing 5/s: none is
// refused, the arrivals keep the pacing bound, at most three requests are
// ever open, and none is at the end. Run under -race.
func TestUseConcurrentSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second, Latency: 50 * time.Millisecond})
		b := core.MustBudget(core.PerSecond(5), core.WithMaxInFlight(3))
		c := newClient(p.Transport(), b)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				s, err := get(t.Context(), c, api+"/v1/items")
				assert.NoError(t, err)
				assert.Equal(t, 200, s)
			})
		}
		wg.Wait()
		assert.Equal(t, 20, p.Count())
		assert.Zero(t, p.Refused())
		assert.NoError(t, p.CheckPacing(5, 200*time.Millisecond, 0))
		assert.LessOrEqual(t, p.PeakInFlight(), 3)
		assert.Zero(t, b.InFlight(), "slots held")
	})
}
