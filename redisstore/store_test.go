package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/redis/go-redis/v9"
)

// base is where the injected clock starts: a Unix time in ns with a
// fractional second, like Redis TIME.
const base = int64(1_732_900_000_123_456_789)

// fakeClock makes s read a clock the test moves, instead of Redis TIME.
func fakeClock(s *Store) *int64 {
	now := new(int64)
	*now = base
	s.clock = func() int64 { return *now }
	return now
}

// An op is one call to a store in the differential test. Times are
// relative: at is when it happens, from the first op.
type op struct {
	at      time.Duration
	kind    byte // 't'ake, 'r'efund, 'o'bserve (Report), 's'tatus, 'c'ommit (Settle)
	pace    core.Pace
	actual  []int64       // commit: the units used, per dimension of the turn's Take
	maxWait time.Duration // take
	turn    int           // refund: index of the turn given back; report: the turn whose At is Sent (-1: MaxInt64, -2: now)
	report  core.Report   // report, without Sent and Pace
}

var (
	testPaces = []time.Duration{10 * time.Millisecond, 25 * time.Millisecond, 7 * time.Millisecond, 333_333}
	testAdapt = []core.Adaptive{core.DefaultAdaptive(), {}, {Decrease: 0.7, MinRate: 0.2, Increase: 0.3}}
)

// testDims are the extra dimensions of the differential test with
// dimensions: at 1 ms and 10 ms per unit, bursts of 500 and 40, slow
// enough to bind, so that reservations stack and underspends give back
// part of their estimate.
var testDims = []core.DimPace{
	{Name: "tokens", Interval: time.Millisecond, Burst: 500},
	{Name: "images:hd", Interval: 10 * time.Millisecond, Burst: 40},
}

// genOps returns a random sequence of calls: takes with and without a
// deadline, refunds of recent and old turns, responses with pauses,
// refusals and quota limits, and changes of pace between calls. With
// dims, takes carry costs in testDims (listed in either order, their paces
// changing too) and some turns are committed, over or under their
// estimate.
func genOps(seed uint64, n int, dims bool) []op {
	r := rand.New(rand.NewPCG(seed, 1))
	pace := core.Pace{Interval: 10 * time.Millisecond, Burst: 3, Adaptive: core.DefaultAdaptive()}
	var costs [][]int64 // per take
	settled := map[int]bool{}
	if dims {
		pace.Dims = append([]core.DimPace(nil), testDims...)
	}
	var ops []op
	var at time.Duration
	turns := 0
	for range n {
		switch x := r.IntN(10); {
		case x < 4:
		case x < 8:
			at += time.Duration(r.Int64N(int64(30 * time.Millisecond)))
		case x < 9:
			at += time.Duration(r.Int64N(int64(3 * time.Second)))
		default:
			at += time.Duration(r.Int64N(1000))
		}
		if r.IntN(12) == 0 {
			pace.Interval = testPaces[r.IntN(len(testPaces))]
		}
		if dims && r.IntN(2) == 0 {
			// Half the time the requests pace too fast to bind, so that
			// the dimensions do: reservations stack on one another there.
			pace.Interval, pace.Burst, pace.Adaptive = time.Millisecond/10, 10, core.Adaptive{}
		}
		if r.IntN(15) == 0 {
			pace.Burst = []int{1, 3, 10}[r.IntN(3)]
		}
		if r.IntN(30) == 0 {
			pace.Adaptive = testAdapt[r.IntN(len(testAdapt))]
		}
		if dims && r.IntN(10) == 0 {
			d := append([]core.DimPace(nil), pace.Dims...)
			i := r.IntN(len(d))
			switch r.IntN(3) {
			case 0:
				d[0], d[1] = d[1], d[0] // the same dimensions, in the other order
			case 1:
				d[i].Interval = testDims[i].Interval * time.Duration(1+r.IntN(2))
			default:
				d[i].Burst = testDims[i].Burst / int64(1+r.IntN(2))
			}
			pace.Dims = d
		}
		o := op{at: at, pace: pace}
		pick := max(0, turns-1-r.IntN(8)) // a recent turn, to settle
		switch x := r.IntN(20); {
		case x < 11:
			o.kind = 't'
			o.maxWait = []time.Duration{-1, -1, 0, time.Duration(r.Int64N(int64(100 * time.Millisecond)))}[r.IntN(4)]
			if dims && o.maxWait < 0 {
				// A bounded backlog: costs queue up fast, and past 2^53 ns
				// from ep (104 days) the script's doubles round where
				// core's integers do not.
				o.maxWait = 5 * time.Second
			}
			turns++
			var c []int64
			for _, d := range pace.Dims {
				// mostly under the burst: a reservation that stacks on
				// earlier ones leaves them something to give back
				c = append(c, []int64{0, r.Int64N(d.Burst/4 + 1), r.Int64N(d.Burst/2 + 1), r.Int64N(d.Burst + 1), d.Burst}[r.IntN(5)])
			}
			o.pace.Cost = c
			costs = append(costs, c)
		case dims && x < 16 && turns > 0 && !settled[pick]:
			o.kind = 'c'
			o.turn = pick
			settled[o.turn] = true // a budget settles a turn once
			for _, n := range costs[o.turn] {
				o.actual = append(o.actual, []int64{0, n, r.Int64N(n + 1), r.Int64N(n + 1), n + r.Int64N(100), n + r.Int64N(500)}[r.IntN(6)])
			}
		case x < 14+bit(dims) && turns > 0:
			o.kind = 'r'
			o.turn = turns - 1
			if r.IntN(3) == 0 {
				o.turn = r.IntN(turns)
			}
		case x < 19:
			o.kind = 'o'
			o.turn = -1 - r.IntN(2)
			if turns > 0 && r.IntN(3) > 0 {
				o.turn = turns - 1 - r.IntN(min(turns, 5))
			}
			status := []int{200, 200, 200, 429, 503, 500, 404}[r.IntN(7)]
			o.report = core.Report{Status: status, Refused: (status == 429 || status == 503) && r.IntN(3) != 0 || r.IntN(10) == 0} // (a 429 the controller found no cut: a pause, a near miss)
			if o.report.Refused && r.IntN(4) != 0 {                                                                                // the factor and plateau a controller decided (else the store's Decrease)
				o.report.Factor = []float64{0.05, 0.3, 0.5, 0.77, 0.99, 1.5}[r.IntN(6)]
				o.report.Plateau = []float64{0, 0.4, 0.8, 1, 2}[r.IntN(5)]
			}
			if r.IntN(3) == 0 {
				o.report.Pause = time.Duration(r.Int64N(int64(2 * time.Second)))
				o.report.Allow = r.IntN(12)
			}
			o.report.Remaining, o.report.Limit, o.report.Reset = -1, -1, -1
			if r.IntN(3) == 0 { // a quota report: what remains until the reset
				// (mild: a pace change re-times the wait in proportion, and
				// the test's times must stay within 2^53 ns of ep)
				o.report.Remaining, o.report.Limit = r.IntN(20)-1, r.IntN(30)-1
				o.report.Reset = time.Duration(r.Int64N(int64(1500*time.Millisecond))) - time.Second/10
				if o.report.Remaining+o.report.Limit < 10 {
					o.report.Reset = min(o.report.Reset, time.Second)
				}
			}
			for _, d := range pace.Dims {
				if r.IntN(4) == 0 {
					o.report.Quotas = append(o.report.Quotas, core.DimQuota{Name: d.Name,
						// mild, so that the costs' debts stay within 2^53 ns of ep
						Remaining: int(d.Burst)/2 + r.IntN(int(d.Burst)/2+1), Limit: r.IntN(2*int(d.Burst)) - 1,
						Reset: time.Duration(r.Int64N(int64(2*time.Second))) - time.Second/10})
				}
			}
		default:
			o.kind = 's'
		}
		ops = append(ops, o)
	}
	return ops
}

// apply runs ops on a store at the given times (moved by move, which
// returns the store's clock at that time) and returns what each call
// returned, with store-clock times made relative to zero.
func apply(st core.Store, ops []op, move func(time.Duration), zero int64) []string {
	ctx := context.Background()
	var turns []core.Turn
	out := make([]string, 0, len(ops))
	rel := func(t int64) string {
		if t-zero < -1<<61 {
			return "idle"
		}
		return fmt.Sprint(t - zero)
	}
	for _, o := range ops {
		move(o.at)
		switch o.kind {
		case 't':
			t, err := st.Take(ctx, o.pace, o.maxWait)
			if err != nil {
				return append(out, "error: "+err.Error())
			}
			turns = append(turns, t)
			// Tokens are each store's own: the refunds' effect shows in
			// the turns that follow.
			out = append(out, fmt.Sprintf("take(%v, %d, %v, %v) = granted %v wait %v at %s paused %v/%d factor %v",
				o.pace.Interval, o.pace.Burst, o.maxWait, o.pace.Cost, t.Granted, t.Wait, rel(t.At), t.Paused, t.Status, t.Factor))
		case 'r':
			if err := st.Refund(ctx, turns[o.turn]); err != nil {
				return append(out, "error: "+err.Error())
			}
			out = append(out, fmt.Sprintf("refund(turn %d)", o.turn))
		case 'o':
			r := o.report
			r.Pace = o.pace
			switch o.turn {
			case -1:
				r.Sent = math.MaxInt64
			case -2:
				r.Sent = zero + int64(o.at) // both clocks read zero at the start
			default:
				r.Sent = turns[o.turn].At
			}
			s, err := st.Report(ctx, r)
			if err != nil {
				return append(out, "error: "+err.Error())
			}
			out = append(out, fmt.Sprintf("report(%d, pause %v, allow %d, refused %v to %v/%v, sent turn %d, quota %d/%d/%v %v) = %+v",
				r.Status, r.Pause, r.Allow, r.Refused, r.Factor, r.Plateau, o.turn, r.Remaining, r.Limit, r.Reset, r.Quotas, s))
		case 'c':
			if err := st.Settle(ctx, turns[o.turn], o.actual); err != nil {
				return append(out, "error: "+err.Error())
			}
			out = append(out, fmt.Sprintf("settle(turn %d, %v)", o.turn, o.actual))
		case 's':
			s, err := st.Status(ctx)
			if err != nil {
				return append(out, "error: "+err.Error())
			}
			out = append(out, fmt.Sprintf("status() = %+v", s))
		}
	}
	return out
}

// TestScriptsDecideLikeMemoryStore runs random sequences of calls through
// core.MemoryStore (under synctest, so its clock is exact) and through the
// Redis scripts (with the same clock injected) and requires the same answer
// to every call: the turn, its wait, the tat around it, the pause, the
// adaptive factor. This is what makes the Lua a faithful port of core's
// GCRA (reserve, cancel, setPace, floorAfterPause), pause and shared factor
// (fleet.Factor: the controller's decided factor, CUBIC recovery).
//
// With dims, the takes also reserve costs in two extra dimensions and some
// turns are settled (Settle): the dimensions' FIFO, their send-time
// charge, their refunds and settlements decide alike too.
func TestScriptsDecideLikeMemoryStore(t *testing.T) {
	for _, dims := range []bool{false, true} {
		for _, rebase := range []int64{rebaseAfter, 2} {
			for seed := range uint64(12) {
				t.Run(fmt.Sprintf("dims=%v/rebase=%d/seed=%d", dims, rebase, seed), func(t *testing.T) {
					decideAlike(t, genOps(seed, 250, dims), rebase)
				})
			}
		}
	}
}

// decideAlike runs ops through a MemoryStore and the scripts and requires
// the same answer to every call.
func decideAlike(t *testing.T, ops []op, rebase int64) {
	var want []string
	synctest.Test(t, func(t *testing.T) {
		mem := core.NewMemoryStore()
		start := time.Now()
		want = apply(mem, ops, func(at time.Duration) { time.Sleep(at - time.Since(start)) }, 0)
	})
	defer func(old int64) { rebaseAfter = old }(rebaseAfter)
	rebaseAfter = rebase
	s := newStore(t)
	now := fakeClock(s)
	got := apply(s, ops, func(at time.Duration) { *now = base + int64(at) }, base)
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			g := "(missing)"
			if i < len(got) {
				g = got[i]
			}
			t.Fatalf("step %d at %v:\n redis  %s\n memory %s\nprevious steps:\n %s", i, ops[i].at, g, want[i],
				strings.Join(want[max(0, i-5):i], "\n "))
		}
	}
}

// TestScriptsSettleLikeMemoryStoreSteps walks two corners of what an
// underspend gives back that random calls seldom reach: 40 reservations
// stacked at one instant keep 32 marks (the first ones then give nothing
// back), and a turn refunded while it is the last takes its mark with it
// (the turn before it then gives back in full).
func TestScriptsSettleLikeMemoryStoreSteps(t *testing.T) {
	pace := core.Pace{Interval: time.Microsecond, Burst: 100, Dims: testDims[:1]}
	take := func(n int64) op {
		p := pace
		p.Cost = []int64{n}
		return op{kind: 't', pace: p, maxWait: -1}
	}
	settle := func(turn int, actual int64) op {
		return op{kind: 'c', pace: pace, turn: turn, actual: []int64{actual}}
	}
	var stacked []op
	for range 40 {
		stacked = append(stacked, take(1)) // each stacks one more unit on the ones before
	}
	stacked = append(stacked, settle(0, 0), settle(20, 0), take(500))
	refunded := []op{take(400), take(50), {kind: 'r', pace: pace, turn: 1}, settle(0, 0), take(500)}
	for i := range refunded[1:] {
		refunded[1+i].at = 300 * time.Millisecond // B stacks 100 ms on A: A may give back 100 ms while B holds
	}
	for name, ops := range map[string][]op{"stacked": stacked, "refunded": refunded} {
		t.Run(name, func(t *testing.T) { decideAlike(t, ops, rebaseAfter) })
	}
}

// step is one call in a step table, at a time relative to the start.
type step struct {
	at      time.Duration
	maxWait time.Duration
	granted bool
	wait    time.Duration
}

// TestTakeSteps walks GCRA's virtual scheduling through the script at
// fixed instants: the burst goes at once, then one per interval; a call
// whose turn is at or past its deadline reserves nothing.
func TestTakeSteps(t *testing.T) {
	s := newStore(t)
	now := fakeClock(s)
	p := core.Pace{Interval: 100 * time.Millisecond, Burst: 2}
	ms := time.Millisecond
	steps := []step{
		{0, -1, true, 0},               // burst 1
		{0, -1, true, 0},               // burst 2
		{0, -1, true, 100 * ms},        // then one per 100 ms
		{0, 200 * ms, false, 200 * ms}, // turn at the deadline: refused, nothing reserved
		{0, 201 * ms, true, 200 * ms},
		{250 * ms, 50 * ms, false, 50 * ms}, // turn exactly at the deadline: refused
		{300 * ms, 0, false, 0},             // maxWait 0 admits nothing, not even a turn due now
		{300 * ms, 1, true, 0},
		{1000 * ms, -1, true, 0}, // idle for 700 ms: the burst is back, and no more
		{1000 * ms, -1, true, 0},
		{1000 * ms, -1, true, 100 * ms},
	}
	for i, st := range steps {
		*now = base + int64(st.at)
		turn, err := s.Take(context.Background(), p, st.maxWait)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Granted != st.granted || turn.Wait != st.wait {
			t.Errorf("step %d: Take(at %v, maxWait %v) = granted %v wait %v, want granted %v wait %v",
				i, st.at, st.maxWait, turn.Granted, turn.Wait, st.granted, st.wait)
		}
		if turn.At != *now+int64(turn.Wait) {
			t.Errorf("step %d: At = now%+d, want now+Wait (%v)", i, turn.At-*now, turn.Wait)
		}
	}
}

// TestTakeExactMonthsLater: a key in steady use for months keeps its
// times exact — every script, the common turn's too, moves the epoch the
// times count from before they outgrow a double's 53 bits — so a turn
// comes at the nanosecond, not at the nearest even one.
func TestTakeExactMonthsLater(t *testing.T) {
	s := newStore(t)
	now := fakeClock(s) // base has an odd nanosecond
	p := core.Pace{Interval: time.Millisecond, Burst: 1}
	day := 24 * time.Hour
	for _, later := range []time.Duration{0, time.Second, 200 * day, 400*day + time.Millisecond} {
		*now = base + int64(later)
		turn, err := s.Take(context.Background(), p, -1)
		if err != nil {
			t.Fatal(err)
		}
		if !turn.Granted || turn.At != *now {
			t.Errorf("Take %v later: granted %v at now%+d ns, want granted at now", later, turn.Granted, turn.At-*now)
		}
	}
}

// TestRefundIsConditional: a turn is given back only when nobody reserved
// after it; given back in reverse order, both come back.
func TestRefundIsConditional(t *testing.T) {
	s := newStore(t)
	now := fakeClock(s)
	ctx := context.Background()
	p := core.Pace{Interval: 100 * time.Millisecond, Burst: 1}
	take := func() core.Turn {
		t.Helper()
		turn, err := s.Take(ctx, p, -1)
		if err != nil {
			t.Fatal(err)
		}
		return turn
	}
	take() // now
	a := take()
	b := take()
	if a.Wait != 100*time.Millisecond || b.Wait != 200*time.Millisecond {
		t.Fatalf("turns in %v and %v, want 100ms and 200ms", a.Wait, b.Wait)
	}
	if err := s.Refund(ctx, a); err != nil { // b was reserved after a: a stays spent
		t.Fatal(err)
	}
	if c := take(); c.Wait != 300*time.Millisecond {
		t.Fatalf("after refunding a turn in the middle, the next turn is in %v, want 300ms (nothing given back)", c.Wait)
	} else if err := s.Refund(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Refund(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Refund(ctx, a); err != nil {
		t.Fatal(err)
	}
	if d := take(); d.Wait != 100*time.Millisecond {
		t.Fatalf("after refunding c, b and a in reverse order, the next turn is in %v, want 100ms", d.Wait)
	}
	*now += int64(time.Hour)
	if err := s.Refund(ctx, a); err != nil { // long after: tat moved on, nothing happens
		t.Fatal(err)
	}
}

// TestPauseExtendsNeverShortens: a pause holds every turn, a shorter one
// does not shorten it, and Status reports what is left with the status
// that set it.
func TestPauseExtendsNeverShortens(t *testing.T) {
	s := newStore(t)
	now := fakeClock(s)
	ctx := context.Background()
	p := core.Pace{Interval: 10 * time.Millisecond, Burst: 5} // adaptive off: the pace stays
	report := func(status int, pause time.Duration) core.StoreStatus {
		t.Helper()
		st, err := s.Report(ctx, core.Report{Status: status, Pause: pause, Refused: status == 429 || status == 503, Sent: math.MaxInt64, Pace: p})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := report(429, 2*time.Second); st.Pause != 2*time.Second || st.PauseStatus != 429 || st.Factor != 1 {
		t.Fatalf("after a 429 asking 2s: %+v, want pause 2s status 429 factor 1", st)
	}
	*now += int64(time.Second)
	if st := report(503, 500*time.Millisecond); st.Pause != time.Second || st.PauseStatus != 429 {
		t.Fatalf("a shorter pause changed the pause: %+v, want 1s left, status 429", st)
	}
	turn, err := s.Take(ctx, p, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !turn.Paused || turn.Status != 429 || turn.Wait != time.Second {
		t.Fatalf("turn during the pause: %+v, want paused by 429 for 1s", turn)
	}
	if _, err := s.Take(ctx, p, time.Second); err != nil {
		t.Fatal(err)
	} else if st, _ := s.Status(ctx); st.Pause != time.Second {
		t.Fatalf("Status: pause %v, want 1s", st.Pause)
	}
	*now += int64(2 * time.Second)
	if st, _ := s.Status(ctx); st.Pause != 0 || st.PauseStatus != 429 {
		t.Fatalf("Status after the pause: %+v, want no pause left", st)
	}
}

// TestAdaptiveDecreaseOncePerBurstFleetWide: two processes (two clients,
// two stores on one key) see refusals to requests sent before the first
// decrease: the factor is halved once, not once per response.
func TestAdaptiveDecreaseOncePerBurstFleetWide(t *testing.T) {
	a := newStore(t)
	b := otherProcess(t, a)
	ctx := context.Background()
	p := core.Pace{Interval: 10 * time.Millisecond, Burst: 10, Adaptive: core.DefaultAdaptive()}
	var sent []int64
	for _, s := range []*Store{a, b, a, b} {
		turn, err := s.Take(ctx, p, -1)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, turn.At)
	}
	time.Sleep(time.Millisecond)
	for i, s := range []*Store{b, a, b, a} {
		st, err := s.Report(ctx, core.Report{Status: 429, Refused: true, Sent: sent[i], Pace: p})
		if err != nil {
			t.Fatal(err)
		}
		if st.Factor != 0.5 {
			t.Fatalf("refusal %d of one burst: factor %v, want 0.5 (one decrease per burst)", i, st.Factor)
		}
	}
	turn, err := a.Take(ctx, p, -1)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := b.Report(ctx, core.Report{Status: 429, Refused: true, Sent: turn.At, Pace: p}); st.Factor != 0.25 {
		t.Fatalf("a refusal to a request sent after the decrease: factor %v, want 0.25", st.Factor)
	}
	if turn.Factor != 0.5 {
		t.Fatalf("the turn after the decrease was paced at factor %v, want 0.5", turn.Factor)
	}
}

// TestKeysTagTTLAndNoscript: the store's keys share one hash tag (one
// Cluster slot), carry a TTL refreshed on use that covers reserved turns
// and pauses, expire when abandoned, and the scripts reload after SCRIPT
// FLUSH.
func TestKeysTagTTLAndNoscript(t *testing.T) {
	s := newStore(t, WithTTL(200*time.Millisecond), WithMaxInFlight(1))
	ctx := context.Background()
	tag := "{" + s.Key() + "}:"
	if !strings.HasPrefix(s.state[0], tag) || !strings.HasPrefix(s.leases[0], tag) {
		t.Fatalf("keys %q and %q do not share the hash tag %q", s.state[0], s.leases[0], tag)
	}
	p := core.Pace{Interval: time.Second, Burst: 1}
	s.Take(ctx, p, -1)
	second, err := s.Take(ctx, p, -1) // tat is now a second past this turn
	if err != nil {
		t.Fatal(err)
	}
	// The expiry, on Redis's clock, not the TTL left: that shrinks with
	// every moment a loaded machine takes between the calls.
	expires, err := s.client.Do(ctx, "PEXPIRETIME", s.state[0]).Int64()
	if err != nil {
		t.Fatal(err)
	}
	want := time.Unix(0, second.At).Add(p.Interval + 200*time.Millisecond)
	if d := time.UnixMilli(expires).Sub(want); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("state expires %v from the end of the last reserved turn + the 200ms idle TTL, want 0 (to the ms)", d)
	}
	l, err := s.AcquireLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := s.client.PTTL(ctx, s.leases[0]).Val(); ttl <= 0 || ttl > DefaultLeaseTTL {
		t.Fatalf("leases TTL %v, want in (0, %v]", ttl, DefaultLeaseTTL)
	}
	l.Release()

	s2 := newStore(t, WithTTL(50*time.Millisecond))
	if _, err := s2.Report(ctx, core.Report{Status: 200, Sent: math.MaxInt64, Pace: core.Pace{Interval: time.Millisecond, Burst: 1}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if n := s2.client.Exists(ctx, s2.state[0]).Val(); n != 0 {
		t.Fatal("an abandoned budget's state is still in Redis after its TTL")
	}

	if err := s.client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(ctx); err != nil {
		t.Fatalf("after SCRIPT FLUSH: %v", err)
	}
	// a plain Take sends its cached EVALSHA command whole: it reloads too
	if err := s.client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if turn, err := s.Take(ctx, p, -1); err != nil || !turn.Granted {
		t.Fatalf("plain Take after SCRIPT FLUSH = %+v, %v", turn, err)
	}
}

func TestNewValidates(t *testing.T) {
	c := newClient(t, testAddr)
	for _, tc := range []struct {
		name  string
		key   string
		opts  []Option
		field string
	}{
		{"empty key", "", nil, "redisstore.New"},
		{"zero timeout", "k", []Option{WithTimeout(0)}, "redisstore.WithTimeout"},
		{"share zero", "k", []Option{WithFailOpen(0)}, "redisstore.WithFailOpen"},
		{"share NaN", "k", []Option{WithFailOpen(math.NaN())}, "redisstore.WithFailOpen"},
		{"share over 1", "k", []Option{WithFailOpen(1.5)}, "redisstore.WithFailOpen"},
		{"negative probe", "k", []Option{WithProbeInterval(-1)}, "redisstore.WithProbeInterval"},
		{"tiny TTL", "k", []Option{WithTTL(time.Microsecond)}, "redisstore.WithTTL"},
		{"negative cap", "k", []Option{WithMaxInFlight(-1)}, "redisstore.WithMaxInFlight"},
		{"tiny lease TTL", "k", []Option{WithLeaseTTL(time.Millisecond)}, "redisstore.WithLeaseTTL"},
	} {
		_, err := New(c, tc.key, tc.opts...)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want a ConfigError naming %s", tc.name, err, tc.field)
		}
	}
	if _, err := New(nil, "k"); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("nil client: New = %v, want ErrInvalidConfig", err)
	}
	var typedNil *redis.Client
	if _, err := New(typedNil, "k"); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("typed nil client: New = %v, want ErrInvalidConfig", err)
	}
	var typedNilCluster *redis.ClusterClient
	if _, err := New(typedNilCluster, "k"); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("typed nil cluster client: New = %v, want ErrInvalidConfig", err)
	}
	if _, err := New(c, "k", nil, WithFailOpen(0.5), WithFailClosed()); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// TestRedisCluster: on a Redis Cluster (one node holding every slot), a
// store through a ClusterClient works — its scripts touch keys of one hash
// slot only — and its keys share that slot.
func TestRedisCluster(t *testing.T) {
	srv := ownRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	admin := newClient(t, srv.addr)
	ctx := context.Background()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, _ := admin.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not come up: %s", info)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.addr}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { cc.Close() })
	s, err := New(cc, "cluster-budget", WithMaxInFlight(1))
	if err != nil {
		t.Fatal(err)
	}
	if !s.ctxTimeouts {
		t.Error("the store did not see the cluster client's ContextTimeoutEnabled")
	}
	b := core.MustBudget(core.PerSecond(100), core.WithStore(s))
	p, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(http.StatusOK, nil)
	l, err := s.AcquireLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	s1, _ := admin.ClusterKeySlot(ctx, s.state[0]).Result()
	s2, _ := admin.ClusterKeySlot(ctx, s.leases[0]).Result()
	if s1 != s2 {
		t.Fatalf("the store's keys are in slots %d and %d, want one", s1, s2)
	}
}

// TestPlainTakeFollowsThePace: a plain Take (no extra dimension, no
// deadline, on Redis's clock: the arguments the store keeps boxed) at a
// new pace is taken at that pace, whether it is a new interval or a new
// burst: a turn an hour away at one turn per hour is a millisecond away at
// one per millisecond, and with the burst cut from 3 to 1 the second turn
// is an hour away.
func TestPlainTakeFollowsThePace(t *testing.T) {
	ctx := context.Background()
	take := func(s *Store, p core.Pace) core.Turn {
		t.Helper()
		turn, err := s.Take(ctx, p, -1)
		if err != nil || !turn.Granted {
			t.Fatalf("Take(%+v) = %+v, %v", p, turn, err)
		}
		return turn
	}
	hourly := core.Pace{Interval: time.Hour, Burst: 1}
	s := newStore(t)
	take(s, hourly)
	if w := take(s, hourly).Wait; w < 59*time.Minute {
		t.Fatalf("the second turn at one per hour waits %v, want about an hour", w)
	}
	if w := take(s, core.Pace{Interval: time.Millisecond, Burst: 1}).Wait; w > time.Second {
		t.Fatalf("at one turn per ms the next turn waits %v, want at most a few ms", w)
	}

	s = newStore(t)
	take(s, core.Pace{Interval: time.Hour, Burst: 3})
	if w := take(s, hourly).Wait; w != 0 {
		t.Fatalf("the first turn after the burst went from 3 to 1 waits %v, want 0 (one of the burst is left)", w)
	}
	if w := take(s, hourly).Wait; w < 59*time.Minute {
		t.Fatalf("the second turn after the burst went from 3 to 1 waits %v, want about an hour", w)
	}
}

// TestPlainTakeArgumentsAllocateNothing: a plain Take at the pace of the
// one before reuses its boxed arguments.
func TestPlainTakeArgumentsAllocateNothing(t *testing.T) {
	s := newStore(t)
	p := core.Pace{Interval: time.Millisecond, Burst: 2}
	if n := testing.AllocsPerRun(100, func() { s.plainCmd(p, -1) }); n != 0 {
		t.Fatalf("plainCmd allocates %v times a call, want 0", n)
	}
	if args := s.plainCmd(p, time.Second); args != nil {
		t.Fatalf("a Take with a deadline got the cached arguments %v", args)
	}
}

// TestLeanTakeRefreshesTheExpiryOncePerMs: takes whose expiry falls on
// the same ms give it once (one PEXPIRE), and a script that gave the key
// another expiry since (a refund, here) makes the next take give it
// again, even on that same ms.
func TestLeanTakeRefreshesTheExpiryOncePerMs(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, WithTTL(time.Minute))
	now := fakeClock(s)
	take := func(p core.Pace) core.Turn {
		t.Helper()
		turn, err := s.Take(ctx, p, -1)
		if err != nil || !turn.Granted {
			t.Fatalf("Take = %+v, %v", turn, err)
		}
		return turn
	}
	fast := core.Pace{Interval: time.Nanosecond, Burst: 1}
	take(fast) // creates the state
	*now += int64(time.Second)
	before := pexpires(t, s)
	for range 10 {
		take(fast) // the fake clock stands still: one ms
	}
	if n := pexpires(t, s) - before; n != 1 {
		t.Fatalf("10 takes on one ms gave the key its expiry %d times, want once", n)
	}

	slow := core.Pace{Interval: time.Second, Burst: 1}
	*now += int64(time.Second)
	take(slow) // the pace changes: the general path
	*now += int64(10 * time.Second)
	a := take(slow) // lean: the expiry is the TTL + the second reserved
	if err := s.Refund(ctx, a); err != nil {
		t.Fatal(err)
	}
	take(slow) // the same second reserved again, on the same ms as a
	ttl, err := s.client.PTTL(ctx, s.state[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl < time.Minute+time.Second-250*time.Millisecond || ttl > time.Minute+time.Second {
		t.Fatalf("after a refund and a take of the same second, the state expires in %v, want the TTL + the reserved second (61s)", ttl)
	}
}

// pexpires returns how many PEXPIRE calls Redis has run.
func pexpires(t *testing.T, s *Store) int64 {
	t.Helper()
	info, err := s.client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_pexpire:calls="); ok {
			n, err := strconv.ParseInt(rest[:strings.Index(rest, ",")], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}
