package retryablehttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckRetry checks CheckRetry's decisions against a budget paused for
// 10s by a 429: within the deadline it defers to next; at or past it, it
// stops with core's own error, which names the 429 that paused the budget
// even when the response at hand is another one.
func TestCheckRetry(t *testing.T) {
	transportErr := &url.Error{Op: "Get", URL: api + "/v1/items", Err: io.ErrUnexpectedEOF}
	tests := []struct {
		name      string
		timeout   time.Duration // 0: no deadline
		resp      *http.Response
		err       error
		wantRetry bool
		wantLate  bool // core's RateLimitError
	}{
		{"no-deadline", 0, response(503, "/v1/items", nil), nil, true, false},
		{"pause-within-deadline", 11 * time.Second, response(503, "/v1/items", nil), nil, true, false},
		{"pause-past-deadline", 2 * time.Second, response(503, "/v1/items", nil), nil, false, true},
		{"pause-ends-at-deadline", 10 * time.Second, response(503, "/v1/items", nil), nil, false, true},
		{"transport-error-past-deadline", 2 * time.Second, nil, transportErr, false, true},
		{"not-retryable", 2 * time.Second, response(404, "/v1/items", nil), nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := core.MustBudget(core.PerSecond(10), core.WithName("api"), core.WithMaxInFlight(1))
				b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"10"}}, time.Time{})
				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}

				retry, err := hgretry.CheckRetry(b, retryablehttp.DefaultRetryPolicy)(ctx, tt.resp, tt.err)
				assert.Equal(t, tt.wantRetry, retry, "retry")
				if !tt.wantLate {
					assert.NoError(t, err)
					return
				}
				var rle *core.RateLimitError
				require.ErrorAs(t, err, &rle)
				deadline, _ := ctx.Deadline()
				assert.Equal(t, &core.RateLimitError{RetryAfter: 10 * time.Second, StatusCode: 429, Reason: core.Paused, Budget: "api", Deadline: deadline}, rle)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Zero(t, b.InFlight(), "asking the budget holds no slot")
			})
		})
	}
}

// TestCheckRetryNeverRetriesBudgetError checks that a budget error comes
// back as it is, not retried, whatever next would say (DefaultRetryPolicy
// retries every transport error it does not know).
func TestCheckRetryNeverRetriesBudgetError(t *testing.T) {
	b := core.MustBudget(core.PerSecond(10))
	budgetErr := &url.Error{Op: "Get", URL: api + "/v1/items", Err: &core.RateLimitError{RetryAfter: time.Second, Reason: core.Paced}}
	retry, err := hgretry.CheckRetry(b, retryablehttp.DefaultRetryPolicy)(context.Background(), nil, budgetErr)
	assert.False(t, retry)
	assert.Same(t, budgetErr, err, "the budget error, as it is")

	retry, _ = retryablehttp.DefaultRetryPolicy(context.Background(), nil, budgetErr)
	assert.True(t, retry, "DefaultRetryPolicy alone would retry it")
}

// TestCheckRetryServerWait checks the deadline against what the response
// asks for when the budget is not paused (a disabled budget here).
func TestCheckRetryServerWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := core.Disabled(core.WithName("tests"))
		require.NoError(t, err)
		check := hgretry.CheckRetry(b, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()

		retry, err := check(ctx, response(429, "/v1/items", http.Header{"Retry-After": {"10"}}), nil)
		assert.False(t, retry)
		var rle *core.RateLimitError
		require.ErrorAs(t, err, &rle)
		deadline, _ := ctx.Deadline()
		assert.Equal(t, &core.RateLimitError{RetryAfter: 10 * time.Second, StatusCode: 429, Reason: core.Paused, Budget: "tests", Deadline: deadline}, rle)

		retry, err = check(ctx, response(429, "/v1/items", http.Header{"Retry-After": {"1"}}), nil)
		assert.True(t, retry, "a wait within the deadline is retried")
		assert.NoError(t, err)
	})
}

// TestCheckRetryNilNext checks that nil next means DefaultRetryPolicy.
func TestCheckRetryNilNext(t *testing.T) {
	check := hgretry.CheckRetry(core.MustBudget(core.PerSecond(10)), nil)
	ctx := context.Background()
	for _, status := range []int{200, 404, 429, 500, 501, 503} {
		resp := response(status, "/", nil)
		wantRetry, wantErr := retryablehttp.DefaultRetryPolicy(ctx, resp, nil)
		retry, err := check(ctx, resp, nil)
		assert.Equal(t, wantRetry, retry, "status %d", status)
		assert.Equal(t, wantErr, err, "status %d", status)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	retry, err := check(cancelled, response(503, "/", nil), nil)
	assert.False(t, retry)
	assert.Same(t, context.Canceled, err)
}

// TestCheckRetryLanes checks that the CheckRetry Use installs reads the
// pause of the request's lane, from the response or, for a transport error,
// from the URL the *url.Error names.
func TestCheckRetryLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := core.MustBudget(core.PerSecond(10))
		exports := core.MustBudget(core.PerSecond(1), core.WithName("exports"))
		exports.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"10"}}, time.Time{})
		c := hgretry.Use(retryablehttp.NewClient(), b, core.WithLane("/exports", exports))
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()

		for _, tc := range []struct {
			resp *http.Response
			err  error
		}{
			{response(503, "/v2/exports/a.csv", nil), nil},
			{nil, &url.Error{Op: "Get", URL: api + "/v2/exports/a.csv", Err: io.ErrUnexpectedEOF}},
		} {
			retry, err := c.CheckRetry(ctx, tc.resp, tc.err)
			assert.False(t, retry)
			var rle *core.RateLimitError
			require.ErrorAs(t, err, &rle)
			assert.Equal(t, "exports", rle.Budget)
		}
		retry, err := c.CheckRetry(ctx, response(503, "/v2/items", nil), nil)
		assert.True(t, retry, "outside the lane, the lane's pause does not stop the retry")
		assert.NoError(t, err)
		assert.False(t, errors.Is(err, context.DeadlineExceeded))
	})
}

func TestCheckRetryNilBudgetPanics(t *testing.T) {
	require.Panics(t, func() { hgretry.CheckRetry(nil, nil) })
}
