package redisstore

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
)

// TestFleetEasesRatherThanHalves: two processes' budgets on one key, and
// a server that reports no quota. A run of admissions, then a refusal,
// shows the fleet's pace just above the server's: the reporting budget
// eases the pace to what the run showed the server keeping rather than
// halving it, and the script takes that factor for the whole fleet (as
// core's TestStoreFleetEasesRatherThanHalves for a MemoryStore). (The
// first refusal, with no run before it, halves.) A refusal from the other
// process, of a request sent before that decrease, is the same burst: it
// lowers nothing more.
func TestFleetEasesRatherThanHalves(t *testing.T) {
	a := newStore(t)
	b := otherProcess(t, a)
	ctx := context.Background()
	ba := core.MustBudget(core.PerSecond(100), core.WithBurst(1), core.WithStore(a))
	bb := core.MustBudget(core.PerSecond(100), core.WithBurst(1), core.WithStore(b))
	first, err := ba.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first.Observe(http.StatusTooManyRequests, nil) // no wait named, no run before it: the pace halves
	first.Release()
	cut, err := b.Status(ctx)
	if err != nil || cut.Factor != 0.5 {
		t.Fatalf("after a refusal that names no wait: factor %v (%v), want 0.5", cut.Factor, err)
	}
	for range 8 {
		p, err := ba.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // the answer's way back
		p.Observe(http.StatusOK, nil)
		p.Release()
	}
	before, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	early, err := bb.Acquire(ctx) // sent before the decrease
	if err != nil {
		t.Fatal(err)
	}
	p, err := ba.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	p.Observe(http.StatusTooManyRequests, nil)
	p.Release()
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eased := st.Factor
	t.Logf("the fleet's factor %v after the run, %v after the refusal", before.Factor, eased)
	if eased <= before.Factor/2 || eased >= before.Factor {
		t.Fatalf("the fleet's factor after a refusal ending a run the server kept: %v → %v, want eased: above the halving's %v, below %v",
			before.Factor, eased, before.Factor/2, before.Factor)
	}
	early.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
	early.Release()
	if st, err := a.Status(ctx); err != nil || st.Factor != eased {
		t.Errorf("after the other process's refusal of a request sent before the decrease: factor %v (%v), want %v (one burst counts once)", st.Factor, err, eased)
	}
}

// TestReportWithAFactorOutOfRange: a Report whose Factor or Plateau is
// not a factor (NaN, infinite, negative, above 1) cuts by the pace's
// Decrease from the store's factor, as core.MemoryStore does — no script
// error.
func TestReportWithAFactorOutOfRange(t *testing.T) {
	ctx := context.Background()
	p := core.Pace{Interval: time.Millisecond, Burst: 1, Adaptive: core.DefaultAdaptive()}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 2} {
		s := newStore(t)
		st, err := s.Report(ctx, core.Report{Status: 429, Refused: true, Factor: f, Plateau: f, Sent: math.MaxInt64, Pace: p})
		if err != nil || st.Factor != 0.5 {
			t.Errorf("a refusal with factor and plateau %v = %+v, %v; want the factor halved, no error", f, st, err)
		}
	}
}

// The script's port of the plateau rule (core's
// TestStoreStaleBudgetsRefusalNeverRaisesTheFactor): a stale budget's
// refusal leaves the plateau no higher than the factor it found, so the
// next success does not lift the fleet above the pace it was cut to.
func TestScriptStaleBudgetsRefusalNeverRaisesTheFactor(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	p := core.Pace{Interval: 10 * time.Millisecond, Burst: 1, Adaptive: core.DefaultAdaptive()}
	rep := func(r core.Report) float64 {
		time.Sleep(10 * time.Millisecond)
		r.Sent, r.Pace = math.MaxInt64, p
		st, err := s.Report(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return st.Factor
	}
	rep(core.Report{Status: 429, Refused: true, Factor: 0.5, Plateau: 1})
	before := rep(core.Report{Status: 429, Refused: true, Factor: 0.3, Plateau: 0.5})
	rep(core.Report{Status: 429, Refused: true, Factor: 0.5, Plateau: 1})
	after := rep(core.Report{Status: 200, Remaining: -1, Limit: -1, Reset: -1})
	t.Logf("factor %v after the cut, %v after a refusal and a success", before, after)
	if after > before {
		t.Errorf("a refusal then a success raised the factor %v → %v", before, after)
	}
}
