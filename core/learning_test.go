package core

import (
	"context"
	"github.com/headgate-go/headgate/core/quotatest"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// A learning budget raises its rate when its successes show the server
// admits more than its reports state: 25 successes sent within 288 ms from
// a server stating 10 per second (its burst, as a GCRA server does) mean
// at least (25 − 2×10)/0.288 s ≈ 17 per second. The raise re-times the
// pacing so far; it does not restart it from the report, which, from the
// middle of a burst, leaves out what the burst's other requests took: the
// calls already spent stay spent, and what goes at once is what the new
// rate returned since, not the report's Remaining.
func TestLearnedRaiseKeepsThePacingSoFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b, start := learnedFrom(t, quota("9", "10", "1"))
		var p Permit
		var err error
		for range 9 { // what the first report says remains goes at once
			if p, err = b.TryAcquire(ctx); err != nil {
				t.Fatalf("after the first report: %v; want its 9 remaining to go at once", err)
			}
			p.Release()
		}
		time.Sleep(300 * ms)
		for i := range 25 {
			b.Observe(200, quota("8", "10", "1"), start.Add(time.Duration(i)*12*ms))
		}
		if got := b.Rate().PerSecondFloat(); got < 16 || got > 18 {
			t.Fatalf("rate %v after 25 successes in 288 ms; want the bound, 17 per second", b.Rate())
		}
		n := 0
		for ; n < 10; n++ {
			if p, err = b.TryAcquire(ctx); err != nil {
				break
			}
			p.Release()
		}
		// 10 sent at 0; by 300 ms, at most 300 ms of the new rate has
		// returned: 5 turns at 17 per second. Restarted from the report,
		// its 8 remaining would go.
		if n > 5 {
			t.Errorf("%d went at once after the raise; want at most 5 (the pacing so far, at the new rate)", n)
		}
	})
}

// Past the batch, a learning budget on a GCRA server that states its burst
// per second settles at the server's refill: the creep that found it
// passes it by a 32nd at most, the slow drain that follows measures it
// over hundreds of tokens, and a token short of that is the rate for
// good — no refusal once settled, and within 2 % of the real rate.
func TestLearnedRateSettlesAtTheRefill(t *testing.T) {
	for _, s := range []struct {
		name    string
		headers quotatest.HeaderStyle
	}{
		{"IETF policy of its burst per second", quotatest.IETF | quotatest.RetryAfterSeconds},
		{"Limit its burst, epoch reset rounded down", quotatest.XRateLimitEpoch | quotatest.ResetRoundedDown | quotatest.RetryAfterSeconds},
	} {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toYear2026()
				bt := issueBatch(quotatest.Config{Burst: 10, Headers: s.headers})
				bt.n = 3000
				r := runBatch(t, bt)
				x := float64(r.makespan) / float64(bt.ideal())
				t.Logf("429s %d, makespan %v = %.3f × ideal %v, learned %v", r.refused, r.makespan, x, bt.ideal(), r.rate)
				if got := r.rate.PerSecondFloat(); got < 98 || got > 100 {
					t.Errorf("learned %v; want the server's 100 per second, within 2%% and never above", r.rate)
				}
				if r.refusedPct(bt.n) > 0.2 || x > 1.03 {
					t.Errorf("%d refused, %.3f × ideal; want ≤ 0.2 %% and ≤ 1.03×", r.refused, x)
				}
			})
		})
	}
}

// learnedFrom returns a learning budget that sent its first call at start
// and was answered with report.
func learnedFrom(t *testing.T, report http.Header) (*Budget, time.Time) {
	t.Helper()
	b, err := NewLearningBudget()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	b.Observe(200, report, start)
	return b, start
}
