package gokit_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/go-kit/kit/ratelimit"
	"github.com/go-kit/kit/sd"
	"github.com/go-kit/kit/sd/lb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgkit "github.com/headgate-go/headgate/gokit"
)

func retrying(ep endpoint.Endpoint, timeout time.Duration) endpoint.Endpoint {
	return lb.RetryWithCallback(timeout, lb.NewRoundRobin(sd.FixedEndpointer{ep}), hgkit.RetryCallback(3))
}

// lb.Retry never waits between tries; after a 429 the decoder returned, the
// next try waits for the pause the 429 set and is sent the instant it ends.
// With no ClientFeedback, the refusal reaches the budget as the
// *ResponseError the decoder returned.
func TestRetryWaitsForThePause(t *testing.T) {
	for _, w := range []wiring{setClient, delaying, decoderOnly} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
				b := core.MustBudget(core.PerSecond(100))
				items := retrying(w.build(b, p.Transport(), "/v1/items", decodeStatus), 10*time.Second)
				start := time.Now()
				p.PauseFor(3 * time.Second)
				resp, err := items(t.Context(), nil)
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp)
				arrivals := p.Arrivals()
				require.Len(t, arrivals, 2, "one refused try, one retry")
				assert.Equal(t, quotatest.RefusedPause, arrivals[0].Outcome)
				assert.Equal(t, 3*time.Second, arrivals[1].At.Sub(start), "the retry went when the pause ended")
				assert.Equal(t, quotatest.Admitted, arrivals[1].Outcome)
			})
		})
	}
}

// When the pause outlasts lb.Retry's timeout, the next try fails at once
// with core's error, unsent, and RetryCallback stops there instead of
// spending the remaining tries.
func TestRetryStopsOnBudgetRefusal(t *testing.T) {
	for _, w := range []wiring{setClient, delaying} {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
				b := core.MustBudget(core.PerSecond(100))
				items := retrying(w.build(b, p.Transport(), "/v1/items", decodeStatus), 5*time.Second)
				start := time.Now()
				p.PauseFor(30 * time.Second)
				_, err := items(t.Context(), nil)
				var re lb.RetryError
				require.ErrorAs(t, err, &re)
				assert.Len(t, re.RawErrors, 2, "the refused try, then the budget's refusal; no third try")
				assert.True(t, core.IsBudgetError(re.Final), "final = %v", re.Final)
				assert.Zero(t, time.Since(start), "failed at once")
				assert.Equal(t, 1, p.Count())
			})
		})
	}
}

// RetryCallback keeps trying up to max tries, except after a budget
// refusal, however it is wrapped.
func TestRetryCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := core.MustBudget(core.PerSecond(1), core.WithMaxInFlight(1))
		permit, err := b.Acquire(t.Context())
		require.NoError(t, err)
		_, slotsTaken := hgkit.NewErroringLimiter(b)(endpoint.Nop)(t.Context(), nil)
		require.ErrorIs(t, slotsTaken, hgkit.ErrLimited)
		require.False(t, core.IsBudgetError(slotsTaken))
		permit.Release()
		_, paced := hgkit.NewErroringLimiter(b)(endpoint.Nop)(t.Context(), nil)
		require.True(t, core.IsBudgetError(paced))
		rl := &core.RateLimitError{RetryAfter: time.Second, Reason: core.Paused, StatusCode: 429}
		refusal := &hgkit.ResponseError{StatusCode: 429}

		cb := hgkit.RetryCallback(3)
		for _, tc := range []struct {
			n    int
			err  error
			want bool
		}{
			{1, refusal, true},
			{2, refusal, true},
			{3, refusal, false},
			{1, errors.New("connection reset"), true},
			{1, rl, false},
			{1, &url.Error{Op: "Get", URL: api, Err: rl}, false},
			{1, fmt.Errorf("wrapped: %w", rl), false},
			{1, paced, false},
			{1, slotsTaken, false},
			{1, ratelimit.ErrLimited, false}, // go-kit's own erroring limiter
		} {
			keepTrying, replacement := cb(tc.n, tc.err)
			assert.Equal(t, tc.want, keepTrying, "RetryCallback(3)(%d, %v)", tc.n, tc.err)
			assert.NoError(t, replacement, "the error is kept as is")
		}
	})
}

// CheckResponse turns the statuses that ask the client to slow down into a
// *ResponseError carrying the headers, and nothing else.
func TestCheckResponse(t *testing.T) {
	retryAfter := http.Header{"Retry-After": {"7"}}
	spent := http.Header{"X-Ratelimit-Limit": {"60"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"30"}}
	for _, tc := range []struct {
		name   string
		status int
		h      http.Header
		want   bool
	}{
		{"200", http.StatusOK, nil, false},
		{"200, quota spent", http.StatusOK, spent, false},
		{"204", http.StatusNoContent, nil, false},
		{"403", http.StatusForbidden, nil, false},
		{"403 Retry-After", http.StatusForbidden, retryAfter, true},
		{"403, quota spent", http.StatusForbidden, spent, true},
		{"429", http.StatusTooManyRequests, nil, true},
		{"429 Retry-After", http.StatusTooManyRequests, retryAfter, true},
		{"500 Retry-After", http.StatusInternalServerError, retryAfter, false},
		{"503", http.StatusServiceUnavailable, nil, true},
		{"503 Retry-After", http.StatusServiceUnavailable, retryAfter, true},
	} {
		err := hgkit.CheckResponse(&http.Response{StatusCode: tc.status, Header: tc.h})
		if !tc.want {
			assert.NoError(t, err, "%s: CheckResponse", tc.name)
			continue
		}
		var re *hgkit.ResponseError
		if assert.ErrorAs(t, err, &re, "%s: CheckResponse", tc.name) {
			assert.Equal(t, tc.status, re.StatusCode, tc.name)
			assert.Equal(t, tc.h, re.Header, "%s: the headers the budget reads", tc.name)
			assert.EqualError(t, err, fmt.Sprintf("headgate: server refused the call: %d %s", tc.status, http.StatusText(tc.status)))
		}
	}
}

// Retry stops on a budget refusal like RetryCallback, and its error reaches
// core's: errors.As finds the *core.RateLimitError (lb.RetryWithCallback's
// does not unwrap), and it is still an lb.RetryError with every try's error.
func TestRetryErrorReachesCoresError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second})
		b := core.MustBudget(core.PerSecond(100))
		items := hgkit.Retry(3, 5*time.Second, lb.NewRoundRobin(sd.FixedEndpointer{setClient.build(b, p.Transport(), "/v1/items", decodeStatus)}))
		p.PauseFor(30 * time.Second)
		_, err := items(t.Context(), nil)
		var rl *core.RateLimitError
		require.ErrorAs(t, err, &rl, "err = %v", err)
		assert.Equal(t, http.StatusTooManyRequests, rl.StatusCode)
		assert.True(t, core.IsBudgetError(err))
		var re lb.RetryError
		require.ErrorAs(t, err, &re)
		assert.Len(t, re.RawErrors, 2, "the refused try, then the budget's refusal; no third try")
		assert.Equal(t, re.Error(), err.Error(), "go-kit's message")
		assert.Equal(t, 1, p.Count())

		// Once the pause is over, a try succeeds and its response comes back.
		p.ClearFaults()
		time.Sleep(31 * time.Second)
		resp, err := items(t.Context(), nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp)
	})
}
