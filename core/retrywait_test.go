package core

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// refusal is a response asking for a pause with Retry-After: value.
func refusal(status int, retryAfter string) *http.Response {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody}
}

// pauseThroughTransport sends one request through a Transport on b to a
// server that answers resp, so b reads resp as it would in use.
func pauseThroughTransport(t *testing.T, b *Budget, resp *http.Response) {
	t.Helper()
	tr := NewTransport(answerWith(func(r *http.Request) (*http.Response, error) {
		resp.Request = r
		return resp, nil
	}), b)
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
	got, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	got.Body.Close()
}

// answerWith is a RoundTripper that answers every request itself (a type
// of this file's own, so the test does not depend on other files' helpers).
type answerWith func(*http.Request) (*http.Response, error)

func (f answerWith) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRetryWaitIsThePauseLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10))
		resp := refusal(http.StatusTooManyRequests, "2")
		pauseThroughTransport(t, b, resp)
		time.Sleep(500 * time.Millisecond)
		// The pause, not resp's own 2 s: half of it has passed.
		if d, err := b.RetryWait(context.Background(), resp); d != 1500*time.Millisecond || err != nil {
			t.Fatalf("RetryWait = %v, %v; want 1.5s, nil", d, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if d, err := b.RetryWait(ctx, nil); d != 1500*time.Millisecond || err != nil {
			t.Fatalf("RetryWait(deadline after the pause, nil) = %v, %v; want 1.5s, nil", d, err)
		}
	})
}

func TestRetryWaitPastTheDeadlineIsTheBudgetError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithName("orders"))
		resp := refusal(http.StatusServiceUnavailable, "2")
		pauseThroughTransport(t, b, resp)
		for _, timeout := range []time.Duration{time.Second, 2 * time.Second} { // before the pause ends; exactly at its end
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			deadline, _ := ctx.Deadline()
			d, err := b.RetryWait(ctx, resp)
			cancel()
			var rl *RateLimitError
			if d != 0 || !errors.As(err, &rl) || rl.StatusCode != http.StatusServiceUnavailable || rl.Reason != Paused || rl.Budget != "orders" || rl.RetryAfter != 2*time.Second || !rl.Deadline.Equal(deadline) {
				t.Fatalf("deadline in %v: RetryWait = %v, %#v; want 0 and a *RateLimitError{2s, 503, Paused, orders, the deadline}", timeout, d, err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("deadline in %v: %v does not match context.DeadlineExceeded", timeout, err)
			}
		}
	})
}

func TestRetryWaitReadsTheResponseWhenTheBudgetIsNotPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfc850 := time.Now().Add(90 * time.Second).UTC().Format("Monday, 02-Jan-06 15:04:05 GMT")
		// A budget that never saw the responses (they did not come through
		// its Transport), so it is not paused.
		b := MustBudget(PerSecond(10), WithMaxPause(time.Minute), WithName("off"))
		for _, tc := range []struct {
			name string
			resp *http.Response
			want time.Duration
		}{
			{"seconds", refusal(http.StatusTooManyRequests, "3"), 3 * time.Second},
			{"rfc850-date-capped", refusal(http.StatusTooManyRequests, rfc850), time.Minute},
			{"over-the-cap", refusal(http.StatusTooManyRequests, "3600"), time.Minute},
			{"no-retry-after", refusal(http.StatusTooManyRequests, ""), 0},
			{"success", refusal(http.StatusOK, ""), 0},
			{"no-response", nil, 0},
		} {
			if d, err := b.RetryWait(context.Background(), tc.resp); d != tc.want || err != nil {
				t.Errorf("%s: RetryWait = %v, %v; want %v, nil", tc.name, d, err, tc.want)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		deadline, _ := ctx.Deadline()
		d, err := b.RetryWait(ctx, refusal(http.StatusTooManyRequests, "3"))
		var rl *RateLimitError
		if d != 0 || !errors.As(err, &rl) || rl.StatusCode != http.StatusTooManyRequests || rl.RetryAfter != 3*time.Second || rl.Budget != "off" || !rl.Deadline.Equal(deadline) {
			t.Fatalf("Retry-After 3 with a 3s deadline: RetryWait = %v, %#v; want 0 and a *RateLimitError{3s, 429, off, the deadline}", d, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v does not match context.DeadlineExceeded", err)
		}
	})
}

func TestRetryWaitReturnsTheContextsError(t *testing.T) {
	b := MustBudget(PerSecond(10))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d, err := b.RetryWait(ctx, refusal(http.StatusTooManyRequests, "1")); d != 0 || err != context.Canceled {
		t.Fatalf("RetryWait(cancelled) = %v, %v; want 0, context.Canceled", d, err)
	}
}
