package core

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// This file guards promises the docs make that no other test checked: each
// test here failed when the code it names was deliberately broken.

func TestZeroBudgetNeverWaitsAndNeverPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Budget
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		for i := range 1000 {
			p, err := b.Acquire(ctx)
			if err != nil {
				t.Fatalf("call %d: Acquire = %v", i, err)
			}
			p.Observe(http.StatusTooManyRequests, retryAfter(30))
			p.Release()
		}
		if _, err := b.TryAcquire(ctx); err != nil {
			t.Fatalf("TryAcquire = %v", err)
		}
		if _, err := b.AcquireCost(ctx, Cost{"tokens", 5}); err != nil {
			t.Fatalf("AcquireCost = %v", err)
		}
		if err := b.Check(ctx); err != nil {
			t.Fatalf("Check = %v", err)
		}
		b.Observe(http.StatusTooManyRequests, retryAfter(30), time.Time{})
		if err := b.SetRate(PerSecond(1)); err != nil {
			t.Fatalf("SetRate = %v", err)
		}
		c := &http.Client{Transport: NewTransport(okTransport(), &b)}
		resp, err := c.Get("http://api.test/")
		if err != nil {
			t.Fatalf("GET through a zero Budget: %v", err)
		}
		resp.Body.Close()
		if d := time.Since(start); d != 0 {
			t.Fatalf("the zero Budget made calls wait %v", d)
		}
		if got := b.PauseRemaining(); got != 0 {
			t.Fatalf("PauseRemaining = %v, want 0", got)
		}
		if got := b.EffectiveRate(); got != b.Rate() {
			t.Fatalf("EffectiveRate = %v, want the configured %v", got, b.Rate())
		}
		if got := b.MaxPause(); got != DefaultMaxPause {
			t.Fatalf("MaxPause = %v, want DefaultMaxPause", got)
		}
		if got := b.InFlight(); got != 0 {
			t.Fatalf("InFlight = %d", got)
		}
	})
}

func okTransport() http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{},
			Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	})
}

// TestRateLimitErrorMatchesDeadlineOnlyWithADeadline: Acquire and Check
// refuse against the caller's deadline, and say so; TryAcquire has none.
func TestRateLimitErrorMatchesDeadlineOnlyWithADeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1))
		if _, err := b.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, err := b.TryAcquire(context.Background())
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != time.Second || !rl.Deadline.IsZero() {
			t.Fatalf("TryAcquire = %#v, want a RateLimitError in 1s with no Deadline", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("TryAcquire's error %v matches context.DeadlineExceeded without a deadline", err)
		}
		if strings.Contains(err.Error(), "deadline") {
			t.Fatalf("TryAcquire's error %q speaks of a deadline", err)
		}
		deadline := time.Now().Add(500 * time.Millisecond)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		for name, err := range map[string]error{"Check": b.Check(ctx), "Acquire": func() error { _, err := b.Acquire(ctx); return err }()} {
			if !errors.As(err, &rl) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s = %v, want a RateLimitError matching context.DeadlineExceeded", name, err)
			}
			if !rl.Deadline.Equal(deadline) {
				t.Fatalf("%s: Deadline = %v, want the context's %v", name, rl.Deadline, deadline)
			}
		}
	})
}

func TestConfigErrorsAreAllReported(t *testing.T) {
	_, err := NewBudget(Rate{}, WithBurst(0), WithMaxInFlight(-1), WithAdaptive(Adaptive{Decrease: 2}))
	for _, field := range []string{"rate.Requests", "WithBurst", "WithMaxInFlight", "WithAdaptive.Decrease"} {
		if !strings.Contains(errString(err), "headgate: "+field+" ") {
			t.Errorf("NewBudget error %q does not name %s", errString(err), field)
		}
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewBudget error %v does not match ErrInvalidConfig", err)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "rate.Requests" {
		t.Errorf("errors.As finds %+v, want the first fault, rate.Requests", ce)
	}
	b, err := Disabled(WithMaxInFlight(-1), WithMaxPause(-time.Second))
	if b != nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(errString(err), "WithMaxInFlight") ||
		!strings.Contains(errString(err), "WithMaxPause") {
		t.Fatalf("Disabled(bad options) = %v, %v; want both faults", b, err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestCheckNeverSpendsTheBudget: Check on the success path reserves on a
// copy; the burst is intact however often it is called.
func TestCheckNeverSpendsTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(5))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		for range 20 {
			if err := b.Check(ctx); err != nil {
				t.Fatalf("Check = %v", err)
			}
		}
		start := time.Now()
		times := sendTimes(t, b, 5)
		for i, d := range times {
			if d != 0 {
				t.Fatalf("call %d went at %v after 20 Checks; want the whole burst of 5 at once", i, d)
			}
		}
		if time.Since(start) != 0 {
			t.Fatal("the burst waited")
		}
	})
}

// TestSetRateBurstFollowsTheRateUnlessWithBurst: the burst follows a new
// rate, unless WithBurst fixed it.
func TestSetRateBurstFollowsTheRateUnlessWithBurst(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want int // sent at once after SetRate(PerSecond(20)) and an idle second
	}{
		{"burst follows", nil, 20},
		{"WithBurst(5) stays", []Option{WithBurst(5)}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := MustBudget(PerSecond(10), append(tc.opts, WithoutAdaptive())...)
				if err := b.SetRate(PerSecond(20)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Second) // idle: the whole burst returns
				at := 0
				for _, d := range sendTimes(t, b, 30) {
					if d == 0 {
						at++
					}
				}
				if at != tc.want {
					t.Fatalf("%d went at once after SetRate(20/s), want %d", at, tc.want)
				}
			})
		})
	}
}

// TestLateErrorReasonThrottled: a call refused at a pace adaptive
// throttling lowered says Throttled, not Paced.
func TestLateErrorReasonThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithBurst(1))
		p, _ := b.Acquire(context.Background())
		p.Observe(http.StatusTooManyRequests, nil) // a refusal with no pause: halve the rate
		if got := b.EffectiveRate(); got.PerSecondFloat() != 5 {
			t.Fatalf("EffectiveRate after a 429 = %v, want 5/s", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_, err := b.Acquire(ctx)
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.Reason != Throttled || rl.StatusCode != 0 {
			t.Fatalf("Acquire = %v, want a RateLimitError with Reason Throttled", err)
		}
	})
}

// TestTransportCostClientErrorGivesTheEstimateBack: a 4xx closed without
// Commit gives its estimate back, like a 5xx.
func TestTransportCostClientErrorGivesTheEstimateBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)))
		next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusBadRequest, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(`{"error":"bad"}`)), Request: r}, nil
		})
		c := &http.Client{Transport: NewTransport(next, b)}
		start := time.Now()
		for i := range 3 {
			req, _ := http.NewRequestWithContext(WithCost(context.Background(), Cost{"tokens", 100}),
				http.MethodPost, "http://llm.test/", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if d := time.Since(start); d != 0 {
				t.Fatalf("request %d after a 400 waited %v: the 400's estimate was kept", i, d)
			}
		}
	})
}

// TestEffectiveRateNeverOverflows: a slow rate with many requests per
// period, slowed to its floor, is stated without wrapping.
func TestEffectiveRateAtTheAdaptiveFloorNeverOverflows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		interval := time.Duration(1e17)                // about 3 years
		r := Rate{Requests: 20, Period: 20 * interval} // 2e18 ns
		b := MustBudget(r, WithBurst(1))               // the span check allows it
		for range 5 {                                  // 0.5^5 < MinRate: the floor
			p, err := b.Acquire(context.Background()) // (a refusal cuts once per request sent)
			if err != nil {
				t.Fatal(err)
			}
			p.Observe(http.StatusTooManyRequests, nil)
		}
		got := b.EffectiveRate()
		want := r.PerSecondFloat() * DefaultAdaptive().MinRate
		if got.Period <= 0 || got.Requests <= 0 || math.Abs(got.PerSecondFloat()-want) > want*1e-9 {
			t.Fatalf("EffectiveRate at the floor = %v (%g/s), want %g/s", got, got.PerSecondFloat(), want)
		}
	})
}

// TestCommitDebtNeverWraps: huge overspends settled one after another keep
// the dimension in debt; the debt saturates instead of wrapping around to
// credit.
func TestCommitDebtNeverWraps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A burst of one token: the next token's turn is the state itself,
		// so a wrapped state would read as long past.
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(1000), WithDimensionBurst(1)))
		var permits []Permit
		for range 4 { // 1 ms apart; all granted before any commits
			p, err := b.AcquireCost(context.Background(), Cost{"tokens", 1})
			if err != nil {
				t.Fatalf("AcquireCost = %v", err)
			}
			permits = append(permits, p)
		}
		for _, p := range permits {
			p.Commit(Cost{"tokens", math.MaxInt64})
			p.Release()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		_, err := b.AcquireCost(ctx, Cost{"tokens", 1})
		var rl *RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter <= time.Hour {
			t.Fatalf("after 4 huge commits AcquireCost = %v, want a RateLimitError far in the future", err)
		}
	})
}
