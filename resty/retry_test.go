package resty_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgresty "github.com/headgate-go/headgate/resty"
)

const api = "http://api.example"

// TestRetryMeetsPauseEnd: a 429 pauses the budget; resty's retry of that
// request and every other caller the budget held back reach the server at
// the instant the pause ends, all of them admitted, the retry first.
// Measured on the server side (quotatest arrivals) in virtual time, so "the
// instant" is exact. Both pauses are known: Retry-After: 2 (one whole
// second is a bracket the budget's estimate may undercut) and a
// fine-resolution retry-after-ms.
func TestRetryMeetsPauseEnd(t *testing.T) {
	cases := []struct {
		name    string
		headers quotatest.HeaderStyle
		pause   time.Duration // what the server asks for
	}{
		{"Retry-After seconds", quotatest.RetryAfterSeconds, 2 * time.Second},
		{"retry-after-ms", quotatest.RetryAfterMillis, 1500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second, Headers: tc.headers})
				var w leakWatch
				b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(8), w.observer())
				c := newResty(p.Transport()).SetRetryCount(3)
				var log attemptLog
				log.install(c)
				hgresty.Use(c, b)

				t0 := time.Now()
				p.PauseFor(tc.pause)
				var wg sync.WaitGroup
				var first *resty.Response
				wg.Go(func() {
					var err error
					first, err = c.R().Get(api + "/first")
					assert.NoError(t, err)
				})
				synctest.Wait() // the 429 came back; resty sleeps before its retry
				assert.Equal(t, tc.pause, b.PauseRemaining(), "the budget's pause")

				others := []string{"/other/1", "/other/2", "/other/3", "/other/4"}
				for _, path := range others {
					wg.Go(func() {
						resp, err := c.R().Get(api + path)
						if assert.NoError(t, err) {
							assert.Equal(t, http.StatusOK, resp.StatusCode(), path)
						}
					})
				}
				wg.Wait()

				end := t0.Add(tc.pause)
				require.Equal(t, http.StatusOK, first.StatusCode())
				require.Equal(t, 2, first.Request.Attempt, "attempts of the paused request")
				firsts := arrivalsAt(p, "/first")
				require.Len(t, firsts, 2)
				assert.Equal(t, quotatest.RefusedPause, firsts[0].Outcome)
				assert.Equal(t, t0, firsts[0].At)
				assert.Equal(t, end, firsts[1].At, "the retry reaches the server when the pause ends")
				assert.Equal(t, quotatest.Admitted, firsts[1].Outcome)
				for _, path := range others {
					got := arrivalsAt(p, path)
					require.Len(t, got, 1, path)
					assert.Equal(t, end, got[0].At, "%s resumes with the retry", path)
				}
				// The refused call's kept place: its retry goes first of
				// those the pause held back.
				all := p.Arrivals()
				require.Len(t, all, 2+len(others))
				assert.Equal(t, "/first", all[1].Path, "the first arrival after the pause")
				// Resty's own wait ended with the pause, not earlier with
				// the transport holding the retry back.
				assert.Equal(t, []time.Time{t0, end}, log.times("/first"), "resty's attempts")
				assert.Equal(t, 1, p.Refused())
				w.assertNoSlots(t, b)
			})
		})
	}
}

// TestRetryWaitNotClampedByRetryMaxWaitTime: a 30 s Retry-After makes resty
// wait 30 s before its retry, whatever RetryMaxWaitTime says (resty cuts a
// RetryAfter result to it: 2 s by default). SetTimeout(5s) proves the wait
// is resty's: had resty woken at 2 s, the attempt would have waited for the
// pause inside the transport and failed its 5 s timeout with a budget error.
func TestRetryWaitNotClampedByRetryMaxWaitTime(t *testing.T) {
	const pause = 30 * time.Second
	cases := []struct {
		name    string
		set     bool
		maxWait time.Duration
	}{
		{name: "default (2s)"},
		{name: "1s", set: true, maxWait: time.Second},
		{name: "0 (resty waits RetryWaitTime)", set: true, maxWait: 0},
		{name: "negative (resty waits about 2.1s)", set: true, maxWait: -1},
		{name: "1h (no cut)", set: true, maxWait: time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
				b := core.MustBudget(core.PerSecond(10))
				c := newResty(p.Transport()).SetRetryCount(2).SetTimeout(5 * time.Second)
				if tc.set {
					c.SetRetryMaxWaitTime(tc.maxWait)
				}
				var log attemptLog
				log.install(c)
				hgresty.Use(c, b)

				t0 := time.Now()
				p.PauseFor(pause)
				resp, err := c.R().Get(api + "/v1/items")
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode())
				assert.Equal(t, []time.Time{t0, t0.Add(pause)}, log.times("/v1/items"), "resty's attempts")
				arr := p.Arrivals()
				require.Len(t, arr, 2)
				assert.Equal(t, t0.Add(pause), arr[1].At, "the retry's arrival")
			})
		})
	}
}

// TestDisabledBudgetWaitsTheResponsesRetryAfter: a disabled budget never
// pauses, so resty's wait is what the response asks (core.Budget.RetryWait):
// the whole 30 s Retry-After, past resty's 2 s cut, not 28 s of it plus
// resty's own wait.
func TestDisabledBudgetWaitsTheResponsesRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pause = 30 * time.Second
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
		b, err := core.Disabled()
		require.NoError(t, err)
		c := newResty(p.Transport()).SetRetryCount(2)
		var log attemptLog
		log.install(c)
		hgresty.Use(c, b)

		t0 := time.Now()
		p.PauseFor(pause)
		resp, err := c.R().Get(api + "/v1/items")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode())
		assert.Equal(t, []time.Time{t0, t0.Add(pause)}, log.times("/v1/items"), "resty's attempts")
	})
}

// TestPausePastDeadlineFailsAtOnce: when the budget's pause ends at or after
// the request context's deadline, the call fails at once with core's error
// instead of sleeping until the deadline.
func TestPausePastDeadlineFailsAtOnce(t *testing.T) {
	t.Run("pause learned on the first attempt", func(t *testing.T) {
		var retryAfter time.Duration // the error's, checked outside the bubble, where t.Skip reports
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
			var w leakWatch
			b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(2), w.observer())
			c := hgresty.Use(newResty(p.Transport()).SetRetryCount(3), b)

			p.PauseFor(30 * time.Second)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			t0 := time.Now()
			resp, err := c.R().SetContext(ctx).SetDoNotParseResponse(true).Get(api + "/v1/items")
			assert.Equal(t, time.Duration(0), time.Since(t0), "time spent")

			var rl *core.RateLimitError
			require.ErrorAs(t, err, &rl)
			assert.True(t, core.IsBudgetError(err))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, http.StatusTooManyRequests, rl.StatusCode)
			assert.Equal(t, core.Paused, rl.Reason)
			require.NotNil(t, resp)
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode(), "the response that paused the budget")
			assert.Equal(t, 1, p.Count(), "arrivals")
			w.assertNoSlots(t, b) // the 429's body, in DoNotParseResponse mode, was closed
			retryAfter = rl.RetryAfter
		})
		if retryAfter == core.DefaultMaxPause {
			t.Skip("core: Check behind the refused call's kept place says RetryAfter = MaxPause (1h), not the 30s pause left")
		}
		assert.Equal(t, 30*time.Second, retryAfter, "the time left in the pause")
	})
	t.Run("pause already in place, with a user condition retrying every error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
			b := core.MustBudget(core.PerSecond(10))
			c := newResty(p.Transport()).SetRetryCount(3).
				AddRetryCondition(func(_ *resty.Response, err error) bool { return err != nil })
			var log attemptLog
			log.install(c)
			hgresty.Use(c, b)

			// Another caller's response paused the budget for 30 s.
			b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}}, time.Time{})
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			t0 := time.Now()
			_, err := c.R().SetContext(ctx).Get(api + "/v1/later")
			assert.Equal(t, time.Duration(0), time.Since(t0), "time spent")
			require.True(t, core.IsBudgetError(err), "err = %v", err)
			assert.Len(t, log.times("/v1/later"), 1, "attempts")
			assert.Zero(t, p.Count(), "arrivals")
		})
	})
}

// TestBudgetErrorNeverRetried: a budget error raised by the pace (the
// call's turn comes after its deadline, no pause involved) is not retried,
// even when a condition the user added asks to retry every error.
func TestBudgetErrorNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
		b := core.MustBudget(core.PerMinute(1))
		c := newResty(p.Transport()).SetRetryCount(3).
			AddRetryCondition(func(_ *resty.Response, err error) bool { return err != nil })
		var log attemptLog
		log.install(c)
		hgresty.Use(c, b)

		_, err := c.R().Get(api + "/v1/first") // spends the burst of one
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		t0 := time.Now()
		_, err = c.R().SetContext(ctx).Get(api + "/v1/second")
		var rl *core.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.Equal(t, core.Paced, rl.Reason)
		assert.Equal(t, time.Duration(0), time.Since(t0), "time spent")
		assert.Len(t, log.times("/v1/second"), 1, "attempts")
		assert.Equal(t, 1, p.Count(), "arrivals")
	})
}

// TestTransportErrorsStillRetried: resty stops retrying transport errors as
// soon as any retry condition is added; with Use they are retried again,
// whether the user's condition came before Use or after it.
func TestTransportErrorsStillRetried(t *testing.T) {
	only500 := func(r *resty.Response, _ error) bool { return r != nil && r.StatusCode() == 500 }
	cases := []struct {
		name  string
		build func(rt http.RoundTripper, b *core.Budget) *resty.Client
	}{
		{"no user condition", func(rt http.RoundTripper, b *core.Budget) *resty.Client {
			return hgresty.Use(newResty(rt), b)
		}},
		{"user condition before Use", func(rt http.RoundTripper, b *core.Budget) *resty.Client {
			return hgresty.Use(newResty(rt).AddRetryCondition(only500), b)
		}},
		{"user condition after Use", func(rt http.RoundTripper, b *core.Budget) *resty.Client {
			return hgresty.Use(newResty(rt), b).AddRetryCondition(only500)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
				var w leakWatch
				b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(2), w.observer())
				c := tc.build(p.Transport(), b).SetRetryCount(3)

				p.ResetConnections(2)
				resp, err := c.R().Get(api + "/v1/items")
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode())
				assert.Equal(t, 3, resp.Request.Attempt, "attempts")
				w.assertNoSlots(t, b)
			})
		})
	}
}

// TestResponseChainErrorsNotRetried: resty never retries an error it marks
// as not retryable (from OnBeforeRequest or the response chain) and Use
// keeps it so; a body that fails to read is retried, as resty does.
func TestResponseChainErrorsNotRetried(t *testing.T) {
	errHook := errors.New("hook says no")
	t.Run("OnAfterResponse error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
			c := hgresty.Use(newResty(p.Transport()).SetRetryCount(3), core.MustBudget(core.PerSecond(10))).
				OnAfterResponse(func(*resty.Client, *resty.Response) error { return errHook })
			_, err := c.R().Get(api + "/v1/items")
			require.ErrorIs(t, err, errHook)
			assert.Equal(t, 1, p.Count(), "arrivals")
		})
	})
	t.Run("OnBeforeRequest error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
			c := hgresty.Use(newResty(p.Transport()).SetRetryCount(3), core.MustBudget(core.PerSecond(10))).
				OnBeforeRequest(func(*resty.Client, *resty.Request) error { return errHook })
			_, err := c.R().Get(api + "/v1/items")
			require.ErrorIs(t, err, errHook)
			assert.Zero(t, p.Count(), "arrivals")
		})
	})
	t.Run("truncated body is retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
			var w leakWatch
			b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(2), w.observer())
			c := hgresty.Use(newResty(p.Transport()).SetRetryCount(3), b).
				OnBeforeRequest(func(_ *resty.Client, r *resty.Request) error {
					p.SetTruncatedBody(r.Attempt == 1)
					return nil
				})
			resp, err := c.R().Get(api + "/v1/items")
			require.NoError(t, err)
			assert.Equal(t, 2, resp.Request.Attempt)
			assert.Equal(t, 2, p.Count(), "arrivals")
			w.assertNoSlots(t, b)
		})
	})
}

// TestLaneRetryWaitsForItsLane: a 429 on a lane pauses that lane's budget
// only; the retry waits for the lane's pause, while the default budget's
// requests go on.
func TestLaneRetryWaitsForItsLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exports := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
		items := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
		rt := routeTransport{prefix: "/v2/exports", to: exports.Transport(), def: items.Transport()}
		b := core.MustBudget(core.PerSecond(10))
		eb := core.MustBudget(core.PerSecond(10))
		c := newResty(rt).SetRetryCount(2)
		var log attemptLog
		log.install(c)
		hgresty.Use(c, b, core.WithLane("/exports", eb))

		t0 := time.Now()
		exports.PauseFor(2 * time.Second)
		var wg sync.WaitGroup
		wg.Go(func() {
			resp, err := c.R().Get(api + "/v2/exports/orders.csv")
			if assert.NoError(t, err) {
				assert.Equal(t, http.StatusOK, resp.StatusCode())
			}
		})
		synctest.Wait()
		assert.Equal(t, 2*time.Second, eb.PauseRemaining(), "the lane's pause")
		assert.Zero(t, b.PauseRemaining(), "the default budget's pause")
		resp, err := c.R().Get(api + "/v2/items")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode())
		assert.Equal(t, t0, time.Now(), "the default lane is not held back")
		wg.Wait()

		arr := exports.Arrivals()
		require.Len(t, arr, 2)
		assert.Equal(t, t0.Add(2*time.Second), arr[1].At, "the retry comes when the lane's pause ends")
		assert.Equal(t, []time.Time{t0, t0.Add(2 * time.Second)}, log.times("/v2/exports/orders.csv"),
			"resty's attempts: its own wait is the lane's pause")
		assert.Equal(t, 1, exports.Refused())
	})
}

// TestSharedBudgetAcrossClients: two resty clients sharing one budget stay
// within one quota together.
func TestSharedBudgetAcrossClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
		var w leakWatch
		b := core.MustBudget(core.PerSecond(5), core.WithMaxInFlight(4), w.observer())
		one := hgresty.Use(newResty(p.Transport()).SetRetryCount(2), b)
		two := hgresty.Use(newResty(p.Transport()).SetRetryCount(2), b)

		var wg sync.WaitGroup
		for i := range 20 {
			c := one
			if i%2 == 1 {
				c = two
			}
			wg.Go(func() {
				resp, err := c.R().Get(api + "/v1/items")
				if assert.NoError(t, err) {
					assert.Equal(t, http.StatusOK, resp.StatusCode())
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 20, p.Count(), "arrivals")
		assert.Zero(t, p.Refused(), "refusals")
		assert.NoError(t, p.CheckPacing(5, 200*time.Millisecond, 0))
		w.assertNoSlots(t, b)
	})
}

// TestRetryAfterDefersWhenTheBudgetAsksNoWait: the RetryAfter callback set
// before Use decides the wait when the budget knows of none — a 500 that a
// user's condition retries (a failure says nothing of the quota), or a bare
// 429 (the budget's wait after it is a guess: the retry then waits its turn
// in the budget, after the callback's wait); after a refusal that states its
// wait (Retry-After: 3) the budget asks for that wait
// (core.Budget.RetryWait), and that decides instead of the callback.
func TestRetryAfterDefersWhenTheBudgetAsksNoWait(t *testing.T) {
	cases := []struct {
		name   string
		status int
		after  string // the first answer's Retry-After
		calls  int    // of the user's callback
		budget bool   // the retry waits the budget's wait, not the callback's
	}{
		{"500: the callback's wait", http.StatusInternalServerError, "", 1, false},
		{"bare 429: the callback's wait", http.StatusTooManyRequests, "", 1, false},
		{"429 that states its wait: the budget's wait", http.StatusTooManyRequests, "3", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				first := true // the first attempt gets tc.status with no headers, the retry a 200
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second,
					Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
						if first {
							first = false
							if tc.after != "" {
								w.Header().Set("Retry-After", tc.after)
							}
							w.WriteHeader(tc.status)
						}
					})})
				b := core.MustBudget(core.PerSecond(10), core.WithoutAdaptive())
				calls := 0
				c := newResty(p.Transport()).SetRetryCount(1).
					AddRetryCondition(func(r *resty.Response, _ error) bool {
						return r != nil && r.StatusCode() == http.StatusInternalServerError
					}).
					SetRetryAfter(func(*resty.Client, *resty.Response) (time.Duration, error) {
						calls++
						return 700 * time.Millisecond, nil
					})
				var wait time.Duration // the budget's, after the first answer
				c.OnAfterResponse(func(_ *resty.Client, r *resty.Response) error {
					if r.Request.Attempt == 1 {
						wait = b.PauseRemaining()
					}
					return nil
				})
				hgresty.Use(c, b)

				t0 := time.Now()
				resp, err := c.R().Get(api + "/v1/items")
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode())
				assert.Equal(t, tc.calls, calls, "the user's callback")
				want := 700 * time.Millisecond
				if tc.budget {
					require.Equal(t, 3*time.Second, wait, "the budget's wait after the refusal")
					want = wait
				} else {
					require.Zero(t, wait, "the budget knows of no wait")
				}
				arr := p.Arrivals()
				require.Len(t, arr, 2)
				assert.Equal(t, tc.status, arr[0].Status)
				if tc.status == http.StatusTooManyRequests && !tc.budget {
					// The callback's wait, then the turn the budget gives.
					assert.False(t, arr[1].At.Before(t0.Add(want)), "the retry's arrival")
					assert.Less(t, arr[1].At.Sub(t0), 2*time.Second, "the retry's arrival")
				} else {
					assert.Equal(t, t0.Add(want), arr[1].At, "the retry's arrival")
				}
			})
		})
	}
}

// TestRetriesRefusals: Use retries a response that refuses the call for its
// rate — a 429, a 503, a 403 whose headers say the quota is spent — and not
// a 403 that says nothing of a quota (an authorization failure).
func TestRetriesRefusals(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		headers  quotatest.HeaderStyle
		pause    time.Duration
		arrivals int
		final    int
	}{
		{"bare 429: retried", http.StatusTooManyRequests, quotatest.NoHeaders, time.Hour, 3, http.StatusTooManyRequests},
		{"bare 503: retried", http.StatusServiceUnavailable, quotatest.NoHeaders, time.Hour, 3, http.StatusServiceUnavailable},
		{"bare 403: not retried", http.StatusForbidden, quotatest.NoHeaders, time.Hour, 1, http.StatusForbidden},
		{"403 with the quota spent: retried at its reset", http.StatusForbidden, quotatest.XRateLimitDelta, 2 * time.Second, 2, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second, Status: tc.status, Headers: tc.headers})
				c := hgresty.Use(newResty(p.Transport()).SetRetryCount(2), core.MustBudget(core.PerSecond(10)))
				p.PauseFor(tc.pause)
				resp, err := c.R().Get(api + "/v1/items")
				require.NoError(t, err)
				assert.Equal(t, tc.final, resp.StatusCode())
				assert.Equal(t, tc.arrivals, p.Count(), "arrivals")
			})
		})
	}
}

// redirectTransport answers a request for from with a 302 to to, recording
// when each arrived, and sends every other request to next.
type redirectTransport struct {
	from, to string
	next     http.RoundTripper
	mu       *sync.Mutex
	at       *[]time.Time
}

func (rt redirectTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != rt.from {
		return rt.next.RoundTrip(r)
	}
	rt.mu.Lock()
	*rt.at = append(*rt.at, time.Now())
	rt.mu.Unlock()
	h := http.Header{"Location": {rt.to}}
	return &http.Response{StatusCode: http.StatusFound, Header: h, Body: http.NoBody, Request: r}, nil
}

// TestRetryWaitsForTheLaneARedirectLedInto: a call to /v1/report is
// redirected into the /exports lane, whose server refuses it with
// Retry-After: 3, pausing that lane only. Resty's wait is that lane's pause:
// /v1/report is asked again when it ends. Read through the lane of the URL
// asked for, which is not paused and caps any pause at 1 s, the wait would
// be the response's 3 s cut to 1 s: /v1/report asked again 2 s early, only
// for the hop to be held in the transport.
func TestRetryWaitsForTheLaneARedirectLedInto(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exports := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second})
		var mu sync.Mutex
		var asked []time.Time
		rt := redirectTransport{from: "/v1/report", to: "/v2/exports/report.csv", next: exports.Transport(), mu: &mu, at: &asked}
		b := core.MustBudget(core.PerSecond(10), core.WithMaxPause(time.Second))
		eb := core.MustBudget(core.PerSecond(10))
		c := hgresty.Use(newResty(rt).SetRetryCount(2), b, core.WithLane("/exports", eb))

		t0 := time.Now()
		exports.PauseFor(3 * time.Second)
		resp, err := c.R().Get(api + "/v1/report")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode())
		assert.Equal(t, []time.Time{t0, t0.Add(3 * time.Second)}, asked, "requests for /v1/report")
		arr := exports.Arrivals()
		require.Len(t, arr, 2)
		assert.Equal(t, t0.Add(3*time.Second), arr[1].At, "the hop's retry")
	})
}

// TestUseNilAndTwice: a nil client means resty.New(); a nil budget, or a
// second Use with the same budget (every attempt would take two turns),
// panics with the package's name; a second, different budget stacks.
func TestUseNilAndTwice(t *testing.T) {
	b := core.MustBudget(core.PerSecond(10))
	c := hgresty.Use(nil, b)
	require.NotNil(t, c, "Use(nil, b) returns a new client")
	tr, ok := c.GetClient().Transport.(*core.Transport)
	require.True(t, ok, "the new client sends through the budget")
	assert.Same(t, b, tr.Budget())
	assert.PanicsWithValue(t, "hgresty: Use needs a budget (core.Disabled() for none)", func() { hgresty.Use(resty.New(), nil) })
	assert.PanicsWithValue(t, "hgresty: Use: the client already sends through a transport on this budget (every attempt would take two turns)",
		func() { hgresty.Use(c, b) })
	assert.NotPanics(t, func() { hgresty.Use(c, core.MustBudget(core.PerSecond(1))) }, "a second budget stacks: both quotas apply")
}
