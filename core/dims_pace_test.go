package core

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// TestDimsPaceChangeKeepsGiveBack: a quota report that changes a
// dimension's pace while a call is in flight (most LLM responses carry one)
// must not cancel what the call gives back when it commits less than its
// estimate. Two budgets differ only in the first call's commit (0 or its
// whole estimate of 100 tokens); a full-burst call after them must wait for
// 100 tokens to return in the first and 200 in the second, at the reported
// pace.
func TestDimsPaceChangeKeepsGiveBack(t *testing.T) {
	report := http.Header{
		"X-Ratelimit-Limit-Tokens":     {"1000"},
		"X-Ratelimit-Remaining-Tokens": {"800"},
		"X-Ratelimit-Reset-Tokens":     {"20s"}, // 800 tokens over 20 s: 25 ms a token, slower than 10 ms
	}
	wait := func(used int64) (d time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100), WithDimensionBurst(1000)))
			ctx := context.Background()
			first, _ := b.AcquireCost(ctx, Cost{"tokens", 100})
			second, _ := b.AcquireCost(ctx, Cost{"tokens", 100}) // granted after the first, in the burst
			second.Observe(http.StatusOK, report)
			first.Commit(Cost{"tokens", used})
			start := time.Now()
			if _, err := b.AcquireCost(ctx, Cost{"tokens", 1000}); err != nil {
				t.Fatal(err)
			}
			d = time.Since(start)
		})
		return d
	}
	kept, gaveBack := wait(100), wait(0)
	// After 200 tokens spent the full burst waits for 200 to return; after
	// 100 (the first gave its 100 back), for 100: half as long.
	if gaveBack <= 0 || kept != 2*gaveBack {
		t.Errorf("a full burst waited %v after a commit of 100 and %v after a commit of 0; want the second half the first",
			kept, gaveBack)
	}
}
