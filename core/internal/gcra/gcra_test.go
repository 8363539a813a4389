package gcra

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const sec = int64(time.Second)

// gcraStep is one call on a State: a reservation at now (with a deadline),
// or the cancellation of the turn reserved at step cancel.
type gcraStep struct {
	now      int64
	deadline int64 // 0 means none
	cancel   int   // 1-based index of the step whose turn to cancel; 0 to reserve
	want     int64 // the turn's send time (reserve), or 1/0 for "given back" (cancel)
	wantOK   bool
}

func runGCRA(t *testing.T, g *State, steps []gcraStep) {
	t.Helper()
	turns := make([]Turn, len(steps))
	for i, s := range steps {
		if s.cancel > 0 {
			got := g.Cancel(turns[s.cancel-1].TATBefore, turns[s.cancel-1].TATAfter)
			if got != s.wantOK {
				t.Fatalf("step %d: cancel(step %d) = %v, want %v", i+1, s.cancel, got, s.wantOK)
			}
			continue
		}
		dl := s.deadline
		if dl == 0 {
			dl = Never
		}
		tr, ok := g.Reserve(s.now, 0, dl)
		if ok != s.wantOK || tr.SendAt != s.want {
			t.Fatalf("step %d: reserve(now=%v, deadline=%v) = (%v, %v), want (%v, %v)",
				i+1, time.Duration(s.now), time.Duration(dl), time.Duration(tr.SendAt), ok, time.Duration(s.want), s.wantOK)
		}
		turns[i] = tr
	}
}

// rate is a count per period, as core.Rate, for the tables below.
type rate struct {
	n   int
	per time.Duration
}

func testGCRA(r rate, burst int) *State {
	return &State{TAT: math.MinInt64 / 2, Interval: int64(r.per) / int64(r.n), Burst: int64(burst)}
}

func TestGCRAIdleBurstThenPace(t *testing.T) {
	// rate{3, 3s} on an idle budget: three at once, then one a second.
	runGCRA(t, testGCRA(rate{3, 3 * time.Second}, 3), []gcraStep{
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 1 * sec, wantOK: true},
		{now: 0, want: 2 * sec, wantOK: true},
		{now: 0, want: 3 * sec, wantOK: true},
	})
}

func TestGCRARefillsWhileIdle(t *testing.T) {
	runGCRA(t, testGCRA(rate{3, 3 * time.Second}, 3), []gcraStep{
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 1 * sec, wantOK: true},
		// At 10 s the budget is idle again: a full burst.
		{now: 10 * sec, want: 10 * sec, wantOK: true},
		{now: 10 * sec, want: 10 * sec, wantOK: true},
		{now: 10 * sec, want: 10 * sec, wantOK: true},
		{now: 10 * sec, want: 11 * sec, wantOK: true},
	})
}

func TestGCRACancelLastGivesTurnToNext(t *testing.T) {
	runGCRA(t, testGCRA(rate{1, time.Second}, 1), []gcraStep{
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 1 * sec, wantOK: true}, // A
		{cancel: 2, wantOK: true},             // A gives its turn back
		{now: 0, want: 1 * sec, wantOK: true}, // B gets A's instant
	})
}

func TestGCRACancelMiddleMovesNothing(t *testing.T) {
	runGCRA(t, testGCRA(rate{1, time.Second}, 1), []gcraStep{
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 1 * sec, wantOK: true}, // A
		{now: 0, want: 2 * sec, wantOK: true}, // B
		{cancel: 2, wantOK: false},            // A cancelled: its turn stays spent
		{now: 0, want: 3 * sec, wantOK: true}, // C is not moved up
		{cancel: 5, wantOK: true},             // C is last: given back
		{now: 0, want: 3 * sec, wantOK: true},
	})
}

func TestGCRADeadlineAtTurnGivesItBack(t *testing.T) {
	runGCRA(t, testGCRA(rate{1, time.Second}, 1), []gcraStep{
		{now: 0, want: 0, wantOK: true},
		{now: 0, want: 1 * sec, wantOK: true},
		{now: 0, deadline: 2 * sec, want: 2 * sec, wantOK: false}, // turn at the deadline: not sent
		{now: 0, deadline: 3 * sec, want: 2 * sec, wantOK: true},  // the next caller gets t=2
	})
}

func TestGCRASetPace(t *testing.T) {
	ms := int64(time.Millisecond)
	cases := []struct {
		name               string
		rate               rate
		burst              int
		reserved           int     // turns taken at t=0 before the change
		interval, newBurst int64   // the new pace
		want               []int64 // the next turns after the change, all asked at t=0
	}{
		{"raise re-times the wait, no burst", rate{1, time.Second}, 1, 1, 100 * ms, 10,
			[]int64{100 * ms, 200 * ms, 300 * ms}},
		{"lower stretches the wait", rate{1, time.Second}, 1, 1, 2 * sec, 1,
			[]int64{2 * sec, 4 * sec}},
		{"idle keeps only what was available", rate{1, time.Second}, 1, 0, 100 * ms, 10,
			[]int64{0, 100 * ms, 200 * ms}},
		{"partly spent burst", rate{4, time.Second}, 4, 2, 100 * ms, 10,
			[]int64{0, 0, 100 * ms}},
		{"smaller burst caps what goes at once", rate{10, time.Second}, 10, 0, 100 * ms, 3,
			[]int64{0, 0, 0, 100 * ms}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := testGCRA(c.rate, c.burst)
			for range c.reserved {
				g.Reserve(0, 0, Never)
			}
			g.SetPace(0, c.interval, c.newBurst)
			for i, want := range c.want {
				if tr, _ := g.Reserve(0, 0, Never); tr.SendAt != want {
					t.Fatalf("turn %d after setPace(%v, %d) at %v, want %v", i, time.Duration(c.interval), c.newBurst, time.Duration(tr.SendAt), time.Duration(want))
				}
			}
		})
	}
}

func TestGCRAFloorAfterPause(t *testing.T) {
	g := testGCRA(rate{10, time.Second}, 10)
	g.FloorAfterPause(5*sec, 3)
	var got []int64
	for range 5 {
		tr, _ := g.Reserve(0, 5*sec, Never)
		got = append(got, tr.SendAt)
	}
	want := []int64{5 * sec, 5 * sec, 5 * sec, 5*sec + sec/10, 5*sec + 2*sec/10}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("turns after a pause allowing 3 = %v, want %v", got, want)
		}
	}
}

// TestGCRAPropertyBound runs random schedules of arrivals, cancellations
// and deadlines and checks the send times against the GCRA bound, the
// arrival order, and that no turn is lost or duplicated.
func TestGCRAPropertyBound(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 42))
		burst := 1 + rng.IntN(5)
		interval := int64(time.Duration(1+rng.IntN(100)) * time.Millisecond)
		g := &State{TAT: math.MinInt64 / 2, Interval: interval, Burst: int64(burst)}
		type res struct {
			t         Turn
			cancelled bool
			givenBack bool
		}
		var live []*res
		now := int64(0)
		for range 300 {
			now += int64(rng.IntN(int(interval) * 2))
			switch rng.IntN(4) {
			case 0: // cancel a waiter whose turn has not come
				var pending []*res
				for _, r := range live {
					if !r.cancelled && r.t.SendAt > now {
						pending = append(pending, r)
					}
				}
				if len(pending) > 0 {
					r := pending[rng.IntN(len(pending))]
					// The model: the turn goes back only if every turn
					// reserved after it was itself given back.
					last := true
					for k := len(live) - 1; live[k] != r; k-- {
						last = last && live[k].givenBack
					}
					got := g.Cancel(r.t.TATBefore, r.t.TATAfter)
					if got != last {
						t.Fatalf("seed %d: cancel gave back=%v, want %v", seed, got, last)
					}
					r.cancelled, r.givenBack = true, got
				}
			default:
				dl := int64(Never)
				if rng.IntN(3) == 0 {
					dl = now + int64(rng.IntN(int(interval)*4))
				}
				tr, ok := g.Reserve(now, 0, dl)
				if !ok {
					if tr.SendAt < dl {
						t.Fatalf("seed %d: refused a turn at %d before deadline %d", seed, tr.SendAt, dl)
					}
					continue
				}
				if tr.SendAt < now || tr.SendAt >= dl {
					t.Fatalf("seed %d: turn %d outside [now %d, deadline %d)", seed, tr.SendAt, now, dl)
				}
				live = append(live, &res{t: tr})
			}
		}
		// FIFO: the standing turns are in reservation order, and no two
		// reservations were handed the same turn beyond what the burst allows.
		var sends []int64
		for _, r := range live {
			if r.cancelled {
				continue
			}
			if n := len(sends); n > 0 && r.t.SendAt < sends[n-1] {
				t.Fatalf("seed %d: turn %v reserved after one at %v goes before it", seed, time.Duration(r.t.SendAt), time.Duration(sends[n-1]))
			}
			sends = append(sends, r.t.SendAt)
		}
		if err := CheckBound(sends, int64(burst), interval); err != nil {
			t.Fatalf("seed %d (burst %d, interval %v): %v", seed, burst, time.Duration(interval), err)
		}
	}
}
