package matrix

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The issue's wants, per scenario, for every headgate client against every
// quotatest server, in virtual time: 500 calls from 100 goroutines at
// 100/s, the figures exact.
func wants(sc Scenario, r Result) []string {
	var failed []string
	want := func(ok bool, format string, a ...any) {
		if !ok {
			failed = append(failed, fmt.Sprintf(format, a...))
		}
	}
	switch sc.Name {
	case "exact":
		want(r.RefusedPct() <= 0.5, "429s %.1f%%, want ≤ 0.5%%", r.RefusedPct())
		want(r.Ratio() <= 1.03, "makespan %.3f× ideal, want ≤ 1.03×", r.Ratio())
	case "2x":
		want(r.RefusedPct() <= 3, "429s %.1f%%, want ≤ 3%%", r.RefusedPct())
		want(r.Ratio() <= 1.25, "makespan %.3f× ideal, want ≤ 1.25×", r.Ratio())
	case "pause":
		want(r.Paused, "the server never paused")
		want(r.IntoKnown == 0, "%d requests sent into the known pause, want 0", r.IntoKnown)
		want(r.Ratio() <= 1.05, "makespan %.3f× (ideal + pause), want ≤ 1.05×", r.Ratio())
		want(r.RetrySeen && r.RetryDelay >= 0 && r.RetryDelay <= 20*time.Millisecond,
			"the refused call's retry came %v after the pause's end (seen %v), want within 20ms", r.RetryDelay, r.RetrySeen)
	case "learned":
		want(r.RefusedPct() <= 3, "429s %.1f%%, want ≤ 3%%", r.RefusedPct())
		want(r.Ratio() <= 1.15, "makespan %.3f× ideal, want ≤ 1.15×", r.Ratio())
	}
	// Whatever the server answers, a budget never sends faster than it was
	// configured to (at the wire: the server's arrival times, against the
	// configured rate and burst).
	want(sc.Learn || r.KeptConfigured, "sent faster than the configured rate: %s", r.ConfiguredError)
	want(r.Failed == 0, "%d calls failed", r.Failed)
	return failed
}

// sane lists what every cell must show whatever the client, or the
// measurement itself is broken: never skipped, not even for a pending
// scenario.
func sane(sc Scenario, r Result) []string {
	var broken []string
	if r.Sent < r.Calls-r.Failed {
		broken = append(broken, fmt.Sprintf("the server saw %d requests for %d successful calls", r.Sent, r.Calls-r.Failed))
	}
	if sc.Pause && (!r.Paused || !r.Found) {
		broken = append(broken, fmt.Sprintf("the pause did not happen as planned (paused %v, a request refused by it %v)", r.Paused, r.Found))
	}
	if r.Leaked != 0 {
		broken = append(broken, fmt.Sprintf("%d budget slots leaked", r.Leaked))
	}
	return broken
}

// issue14Pending are the cells whose wants today's core does not meet yet
// (issue 14), as "scenario/server name prefix": a headgate cell of theirs
// that misses them is skipped, with its figures; one that meets them
// passes. Every other headgate cell is held to the wants. Once every cell
// of a pending entry meets them, the test fails until the entry is removed
// from here, so the list only shrinks.
//
// Sliding windows: bench/matrix/sliding_bound_test.go shows no client can
// beat 1.25× the ideal there (exact, 2×, learned), nor 1.057× the ideal +
// pause after a pause: out of reach of the wants. Headgate is at 1.26×
// with 0.2–0.4 % 429s (exact, learned: the first burst's probe, and on
// the IETF style's whole-second resets its early probe for the window's
// end; the pace is trimmed by one request per window once the quota that
// read as windows returns part of itself, before any near miss;
// configured at 2×, the same), and 1.059× after a pause (at the floor:
// its wait after the fresh quota is spent ends with one probe, whose
// Remaining the rest spend at once).
var issue14Pending = []struct {
	prefix string // "scenario/server name prefix"
}{
	{"exact/quotatest sliding"},
	{"2x/quotatest sliding"},
	{"pause/quotatest sliding"},
	{"learned/quotatest sliding"},
}

// pendingEntry returns the issue14Pending entry c falls under, or "".
func pendingEntry(c Cell) string {
	for _, e := range issue14Pending {
		if strings.HasPrefix(c.Scenario.Name+"/"+c.Server.Name, e.prefix) {
			return e.prefix
		}
	}
	return ""
}

func cellKey(c Cell) string { return c.Scenario.Name + "/" + c.Server.Name + "/" + c.Client.Name }

// virtualStart is when every virtual batch starts: on a whole second, so
// that a fixed window's best is the ideal, and in this century. A bubble's
// clock starts at 2000-01-01, and a Unix reset then (946684800) is under
// 10⁹, which clients rightly read as seconds from now, not as a Unix time.
var virtualStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// runVirtual runs c in-process inside a synctest bubble.
func runVirtual(t *testing.T, c Cell) Result {
	t.Helper()
	return runVirtualAt(t, c, 0)
}

// runVirtualAt runs c as runVirtual does, started phase past a whole
// second.
func runVirtualAt(t *testing.T, c Cell, phase time.Duration) Result {
	t.Helper()
	var r Result
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(virtualStart.Add(phase))) // instant, in virtual time
		env := &Env{Workload: Issue14, InProcess: true}
		var err error
		if r, err = env.Run(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	})
	return r
}

func summary(r Result) string {
	s := fmt.Sprintf("sent %d, 429s %d (%.1f%%), failed %d, makespan %v = %.3f× ideal %v",
		r.Sent, r.Refused, r.RefusedPct(), r.Failed, r.Makespan, r.Ratio(), r.Ideal)
	if r.Paused {
		s += fmt.Sprintf(", into known pause %d, retry %v after its end (seen %v)", r.IntoKnown, r.RetryDelay, r.RetrySeen)
	}
	if !r.KeptConfigured {
		s += ", faster than the configured rate"
	}
	return s
}

var virtualOut = flag.String("virtual.out", "", "write the virtual matrix's tables (markdown) to this file")

func TestWantsInVirtualTime(t *testing.T) {
	var servers []ServerSpec
	for _, s := range Servers {
		if s.InProcess {
			servers = append(servers, s)
		}
	}
	// Each cell is a parallel subtest, its own bubble, sharing nothing
	// with the others: they use every CPU. The cleanup runs once all are
	// done.
	cells := Cells(servers, Scenarios, Clients)
	results := make([]Result, len(cells)) // by cell, in table order: each cell's subtest writes its own
	var mu sync.Mutex
	missed := map[string]int{} // per pending entry, the headgate cells that missed the wants; guarded by mu
	t.Cleanup(func() {
		checkLedger(t, "TestWantsInVirtualTime/")
		for _, e := range issue14Pending {
			if n, ran := missed[e.prefix]; ran && n == 0 && *judgeWants {
				t.Errorf("every headgate cell of %q meets the issue's wants now: remove it from issue14Pending", e.prefix)
			}
		}
		if *virtualOut != "" {
			var ran []Result
			for _, r := range results {
				if r.Scenario != "" { // not a cell whose run failed
					ran = append(ran, r)
				}
			}
			if err := os.WriteFile(*virtualOut, []byte(Render(ran)), 0o644); err != nil {
				t.Error(err)
			}
		}
	})
	for i, c := range cells {
		t.Run(cellKey(c), func(t *testing.T) {
			t.Parallel()
			r := runVirtual(t, c)
			results[i] = r
			if r.Skipped != "" {
				t.Skip(r.Skipped)
			}
			for _, b := range sane(c.Scenario, r) {
				t.Error(b)
			}
			if !c.Client.Headgate { // the baseline is measured beside, held to nothing
				t.Log(summary(r))
				return
			}
			failed := wants(c.Scenario, r)
			if c.Scenario.Pause && c.Server.Name == unknowableEnd {
				failed = knowableWants(failed)
			}
			entry := pendingEntry(c)
			pending := entry != ""
			if pending {
				mu.Lock()
				missed[entry] += min(1, len(failed))
				mu.Unlock()
			}
			switch {
			case pending && len(failed) > 0:
				t.Skipf("issue 14, not met yet: %v; measured: %s", failed, summary(r))
			default:
				judge(t, failed, summary(r))
			}
		})
	}
}

// Phases where the GitHub-style GCRA server (its reset an epoch second
// rounded down) once missed the wants, each for every headgate client: a
// reset a few ms away that is the bucket's full refill rounded down read as
// a spent window (configured at 2×, at 990 ms: 9.8×; learned at 890 ms:
// 1.23×), a server pause begun just before a whole second read as a
// sliding window's turn and probed into (pause).
func TestWantsAtUnluckyPhases(t *testing.T) {
	const github = "quotatest GCRA · GitHub-style epoch reset (rounded down) + Retry-After"
	for _, p := range []struct {
		scenario string
		phase    time.Duration
	}{{"2x", 990 * time.Millisecond}, {"pause", 430 * time.Millisecond}, {"learned", 890 * time.Millisecond}} {
		sc, _ := ScenarioByName(p.scenario)
		srv, _ := ServerByName(github)
		for _, cl := range Clients {
			if !cl.Headgate {
				continue
			}
			c := Cell{Server: srv, Scenario: sc, Client: cl}
			t.Run(fmt.Sprintf("%s/%v/%s", p.scenario, p.phase, cl.Name), func(t *testing.T) {
				t.Parallel()
				r := runVirtualAt(t, c, p.phase)
				for _, f := range sane(sc, r) {
					t.Error(f)
				}
				judge(t, wants(sc, r), summary(r))
			})
		}
	}
}

// unknowableEnd is the server whose pause's end no client can know within
// its second: a fixed window's reset, rounded down, and no Retry-After.
// TestRoundedDownPauseEndUnknowable shows no client can both send nothing
// into such a pause and retry within 20 ms of its end; whether a batch
// does depends on where the pause ends in its second and, at a whole
// second, on the order the bubble runs the goroutines (a retry 30 ms late
// in one CI run).
const unknowableEnd = "quotatest fixed · GitHub-style epoch reset (rounded down) · no Retry-After"

// knowableWants drops from failed what TestRoundedDownPauseEndUnknowable
// shows no client can promise for unknowableEnd's pause: nothing sent into
// it, the refused call's retry within 20 ms of its end.
func knowableWants(failed []string) []string {
	var kept []string
	for _, f := range failed {
		if !strings.Contains(f, "into the known pause") && !strings.HasPrefix(f, "the refused call's retry") {
			kept = append(kept, f)
		}
	}
	return kept
}
