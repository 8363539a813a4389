package redisstore

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

// TestFleetOfFourProcessesSpendsOneBudget: four OS processes, each with a
// PerSecond(200) budget on one Redis key, send as fast as their budgets let
// them for 5 s to one provider. The provider sees one budget's pace, not
// four: the turns Redis granted the processes obey GCRA's bound for burst
// 200 at 5 ms exactly (on Redis's clock, no slack), no turn that made a
// call wait left the budget idle but for the turns granted and not used
// (the fleet spends the whole budget), no
// request went without a turn, and the provider refuses nothing. Wall-clock
// send times and throughput are only logged: a loaded machine delays and
// bunches them, and core's TestSynctestFleetOnOneStoreSpendsOneBudget holds
// them exactly in virtual time.
func TestFleetOfFourProcessesSpendsOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("5 s of real time")
	}
	const (
		procs   = 4
		rate    = 200
		burst   = rate
		dur     = 5 * time.Second
		workers = 16
	)
	interval := time.Second / rate
	// The provider enforces the same rate with a second's worth of extra
	// burst: a send leaves after its turn, never before, but a stalled
	// process sends its late requests together, so the provider can see
	// the turns of up to (stall / interval) more intervals in one window.
	// That headroom makes "refuses nothing" hold unless the machine stalls
	// a process for a whole second; the exact bound is the turns' above.
	srv, err := quotatest.NewServer(quotatest.Config{Requests: rate, Period: time.Second, Burst: burst + rate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	key := testKey(t)
	start := time.Now().Add(time.Second) // every process starts at once
	var hs []*helper
	for range procs {
		hs = append(hs, startHelper(t, "fleet", map[string]string{
			"ADDR": testAddr, "KEY": key, "URL": srv.URL, "RATE": strconv.Itoa(rate),
			"WORKERS": strconv.Itoa(workers), "START": strconv.FormatInt(start.UnixNano(), 10), "DUR": dur.String(),
		}))
	}
	ok, unused := 0, 0
	var sends []time.Time
	var turns []core.Turn
	for i, h := range hs {
		r := h.report(t)
		t.Logf("process %d: %d sent, %d refused, %d errors, %d turns", i, r.OK, r.Refused, r.Errors, len(r.Turns))
		for _, at := range r.Sends {
			sends = append(sends, time.Unix(0, at))
		}
		for _, tr := range r.Turns {
			turns = append(turns, tr.turn())
		}
		if r.Errors > 0 {
			t.Errorf("process %d: %d transport errors, first: %s", i, r.Errors, r.FirstError)
		}
		if len(r.Turns) == 0 {
			t.Errorf("process %d was granted no turn: the fleet is not sharing fairly enough to test", i)
		}
		ok += r.OK
		unused += max(0, len(r.Turns)-len(r.Sends))
	}
	slices.SortStableFunc(turns, func(a, b core.Turn) int { return cmp.Compare(a.At, b.At) })
	if err := quotatest.CheckTimes(turnTimes(turns), burst, interval, 0); err != nil {
		t.Errorf("the turns Redis granted the fleet break one budget's bound: %v", err)
	}
	if queued := checkNoIdleQueue(t, turns, interval, unused); queued == 0 {
		t.Error("no call waited for its turn: the fleet did not spend the budget")
	}
	arrivals := srv.Arrivals()
	if len(arrivals) > len(turns) || len(sends) > len(turns) {
		t.Errorf("%d sends and %d arrivals at the provider for %d turns: a request went without a turn",
			len(sends), len(arrivals), len(turns))
	}
	if n := srv.Refused(); n > 0 {
		t.Errorf("the provider refused %d requests", n)
	}
	t.Logf("%d requests from %d processes in %v: %.1f/s after the burst of %d (one budget: %d/s); "+
		"the wall-clock send times %v one budget's bound with 10ms of slack",
		len(arrivals), procs, dur, float64(len(arrivals)-burst)/dur.Seconds(), burst, rate,
		map[bool]string{true: "obey", false: "break"}[quotatest.CheckTimes(sends, burst, interval, 10*time.Millisecond) == nil])
	if ok > len(arrivals) {
		t.Errorf("processes report %d admitted, the provider saw only %d arrivals", ok, len(arrivals))
	}
}

// TestFleetPauseFromOneProcessStopsTheOthers: three processes share a
// budget. One calls an API that starts a pause; the two others call
// another that never refuses. The first process's 429 pauses the fleet
// through Redis: once its store's Report has put the pause in Redis, the
// others are granted no turn but those already queued (one per process)
// until the pause is over, then they resume. Checked on the turns Redis
// granted: a loaded machine can delay when the pause reaches Redis, which
// only narrows the window checked, never breaks the check.
func TestFleetPauseFromOneProcessStopsTheOthers(t *testing.T) {
	const (
		procs = 3
		rate  = 60
	)
	interval := time.Second / rate
	paused, err := quotatest.NewServer(quotatest.Config{Requests: 10000, Period: time.Second, Headers: quotatest.RetryAfterMillis})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(paused.Close)
	other, err := quotatest.NewServer(quotatest.Config{Requests: 10000, Period: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	key := testKey(t)
	start := time.Now().Add(time.Second)
	var hs []*helper
	for i := range procs {
		url := other.URL
		if i == 0 {
			url = paused.URL
		}
		hs = append(hs, startHelper(t, "fleet", map[string]string{
			"ADDR": testAddr, "KEY": key, "URL": url, "RATE": strconv.Itoa(rate), "BURST": "1",
			"WORKERS": "1", "START": strconv.FormatInt(start.UnixNano(), 10), "DUR": "2500ms",
		}))
	}
	time.Sleep(time.Until(start.Add(800 * time.Millisecond)))
	const pause = 700 * time.Millisecond
	// The provider's pause ends at least pause after this; its
	// retry-after-ms is rounded up, so the pause in Redis ends no earlier.
	pauseEnd := time.Now().Add(pause).UnixNano()
	paused.PauseFor(pause)
	var reports []fleetReport
	for _, h := range hs {
		reports = append(reports, h.report(t))
	}
	heard := reports[0].Paused
	if heard == 0 {
		t.Fatal("the first process never put a pause in Redis")
	}
	// A turn taken before Redis had the pause comes at most one interval
	// per process (one worker each) after it.
	reservedBy := heard + int64(procs)*int64(interval)
	var during []string
	resumed := false
	for i, r := range reports[1:] {
		for _, tr := range r.Turns {
			switch {
			case tr.At <= reservedBy:
			case tr.At < pauseEnd:
				during = append(during, fmt.Sprintf("process %d: %v after the pause was in Redis", i+1, time.Duration(tr.At-heard)))
			default:
				resumed = true
			}
		}
	}
	t.Logf("the pause reached Redis %v into the run; turns from %v after the start to the pause's end were checked",
		time.Duration(heard-start.UnixNano()), time.Duration(reservedBy-start.UnixNano()))
	if len(during) > 0 {
		t.Errorf("the other processes were granted turns inside the pause: %v", during)
	}
	if !resumed {
		t.Error("the other processes were granted no turn after the pause")
	}
}

// TestFleetOfFourProcessesSharesATokensBudget: four OS processes, each with
// a budget of 2000 requests/s and a "tokens" dimension of 20,000/s (burst
// 2000) on one Redis key, call a provider enforcing those tokens for 4 s,
// each call reserving its tokens (50 to 449) before it goes and committing
// what it used after. The fleet keeps one tokens budget: the tokens used,
// at the turns Redis granted their calls, hold at most burst + rate × W in
// every window W exactly (Redis's clock, no slack), and the provider
// refuses nothing. How much of the bound the fleet used is only logged: a
// loaded machine slows the callers (core's TestStoreDimsPropertyWindowsFIFONoLeak
// holds the exact bounds in virtual time, on the MemoryStore these scripts
// are checked against).
func TestFleetOfFourProcessesSharesATokensBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("4 s of real time")
	}
	const (
		procs    = 4
		tok      = 20000
		tokBurst = 2000
		dur      = 4 * time.Second
	)
	// A second's worth of extra token burst at the provider: a send leaves
	// after its turn, but a stalled process sends late calls together, so
	// the provider can see up to a stall's worth of tokens more in one
	// window than the turns hold. "Refuses nothing" holds unless a process
	// stalls for a second; the exact bound is the turns' below.
	srv, err := quotatest.NewServer(quotatest.Config{Requests: 100000, Period: time.Second,
		Tokens: tok, TokenBurst: tokBurst + tok})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	key := testKey(t)
	start := time.Now().Add(time.Second)
	var hs []*helper
	for range procs {
		hs = append(hs, startHelper(t, "tokens", map[string]string{
			"ADDR": testAddr, "KEY": key, "URL": srv.URL, "RATE": "2000", "TOK": strconv.Itoa(tok),
			"TOKBURST": strconv.Itoa(tokBurst), "COST": "400", "WORKERS": "4",
			"START": strconv.FormatInt(start.UnixNano(), 10), "DUR": dur.String(),
		}))
	}
	var sends, turns []weighted
	var total int64
	for i, h := range hs {
		r := h.report(t)
		var mine int64
		for j, at := range r.Sends {
			sends = append(sends, weighted{at, r.Tokens[j]})
			turns = append(turns, weighted{r.Turns[j].At, r.Tokens[j]})
			mine += r.Tokens[j]
		}
		t.Logf("process %d: %d calls, %d tokens, %d refused, %d errors", i, len(r.Sends), mine, r.Refused, r.Errors)
		if r.Errors > 0 {
			t.Errorf("process %d: %d errors, first: %s", i, r.Errors, r.FirstError)
		}
		if mine == 0 {
			t.Errorf("process %d sent nothing", i)
		}
		total += mine
	}
	if err := checkWeighted(turns, tokBurst, tok, 0); err != nil {
		t.Errorf("the tokens used at the turns Redis granted break one tokens budget: %v", err)
	}
	if n := srv.Refused(); n > 0 {
		t.Errorf("the provider refused %d calls", n)
	}
	bound := tokBurst + tok*dur.Seconds()
	t.Logf("%d tokens in %v from %d processes: %.1f %% of the bound %.0f (burst + rate × W); "+
		"wall-clock sends within the bound with 25ms of slack: %v",
		total, dur, procs, 100*float64(total)/bound, bound, checkWeighted(sends, tokBurst, tok, 25*time.Millisecond) == nil)
}

// weighted is one send and the units it spent.
type weighted struct{ at, n int64 }

// checkWeighted checks that sends (in any order) hold at most burst +
// rate × (W + slack) units in every window W between two of them.
func checkWeighted(sends []weighted, burst, rate int64, slack time.Duration) error {
	s := slices.Clone(sends)
	slices.SortFunc(s, func(a, b weighted) int { return int(a.at - b.at) })
	for i := range s {
		var sum int64
		for j := i; j < len(s); j++ {
			sum += s[j].n
			w := time.Duration(s[j].at - s[i].at)
			if bound := float64(burst) + float64(rate)*(w+slack).Seconds(); float64(sum) > bound {
				return fmt.Errorf("%d units in the %v from send %d to send %d, bound %.0f", sum, w, i, j, bound)
			}
		}
	}
	return nil
}
