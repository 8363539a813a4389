package matrix

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The floor is what the greedy client reaches on quotatest's sliding
// window (sliding_bound_test.go), to its 1 ms retry step, at any phase: no
// sooner than the proof's bound — (N/L − φ)·W; after the pause, 6.34 s − φ
// — and within 1 % of it (the counter's integer weighting admits each
// window's first call a hundredth of a window late).
func TestSlidingFloor(t *testing.T) {
	w := Issue14
	for _, tc := range []struct {
		phase time.Duration
		pause bool
		bound time.Duration
	}{
		{0, false, 5 * time.Second},
		{500 * time.Millisecond, false, 4500 * time.Millisecond},
		{0, true, 6340 * time.Millisecond},
		{500 * time.Millisecond, true, 5840 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("phase %v pause %v", tc.phase, tc.pause), func(t *testing.T) {
			t.Parallel()
			floor := slidingWindows{length: time.Second}.floor(w, tc.phase, tc.pause)
			if floor < tc.bound || floor > tc.bound+tc.bound/100 {
				t.Errorf("floor = %v, want the bound %v (+ at most 1%%)", floor, tc.bound)
			}
			if tc.phase == 0 {
				return // TestSlidingWindowBound runs the greedy client there
			}
			greedy := greedySliding(t, tc.pause, tc.phase)
			if greedy < floor || greedy > floor+floor/200 {
				t.Errorf("the greedy client on quotatest took %v, want the floor %v (+ at most 0.5%% for its 1 ms retry step)", greedy, floor)
			}
			t.Logf("floor %v, greedy client %v, bound %v", floor, greedy, tc.bound)
		})
	}
	// httprate rounds its estimate: half a request more at each instant,
	// which the floor of its rounding counter counts.
	t.Run("httprate", func(t *testing.T) {
		t.Parallel()
		const phase = 500 * time.Millisecond
		floor := (slidingWindows{length: time.Second, rounds: true}).floor(w, phase, false)
		exact := (slidingWindows{length: time.Second}).floor(w, phase, false)
		greedy := greedyOn(t, inProcessAt(httprateServer, phase), false)
		if greedy < floor || greedy > floor+floor/200 {
			t.Errorf("the greedy client on httprate took %v, want its floor %v (+ at most 0.5%%)", greedy, floor)
		}
		if floor >= exact {
			t.Errorf("httprate's floor %v, want under an exact counter's %v", floor, exact)
		}
		t.Logf("floor %v (an exact counter's %v), greedy client %v", floor, exact, greedy)
	})
}

// inProcessAt is s served in-process, its batch started phase after the
// server (httprate's windows start when its limiter is built).
func inProcessAt(s ServerSpec, phase time.Duration) ServerSpec {
	s = Aged(s, phase)
	s.InProcess = true
	return s
}

// greedyOn runs the batch with the greedy client of greedySliding against
// s, in-process in virtual time, started on a whole second, and returns
// its makespan.
func greedyOn(t *testing.T, s ServerSpec, pause bool) time.Duration {
	var makespan time.Duration
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(virtualStart))
		w := Issue14
		srv, err := s.start(serverEnv{w: w, pause: pause, inProcess: true})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		in, ok := srv.Base.(handlerTransport)
		if !ok {
			t.Fatalf("%s in-process: served by a %T, want a handlerTransport", s.Name, srv.Base)
		}
		makespan = greedyBatch(t, w, in.h, srv.URL)
	})
	return makespan
}

// Started anywhere in a sliding window's second, every headgate client
// finishes within 3 % of the floor for its phase, with the wants' 429s
// (configured exactly, learned):
// it spends the window it starts in at once, and when the first burst's
// wait ends, what the windows since returned at once too (the counter
// allows L·e at e into the next window). The pause: within 3 % of its
// floor, nothing sent into the known pause, and the refused call's
// retry within 20 ms of the pause's end. 990 ms: a batch begun a hair
// before a turn, its first refusal at the turn (epoch resets, the IETF
// style's whole-second ones and httprate's). 980 ms: the pause ends 20 ms
// before a turn, the near miss after its burst comes before the turn and
// its probe just after it, both refused (on the IETF style's whole-second
// resets the wait then ends a stated interval early: core's
// TestBatchSlidingWindowPauseBegunBeforeATurn).
func TestSlidingAtPhase(t *testing.T) {
	t.Cleanup(func() { checkLedger(t, "TestSlidingAtPhase/") })
	var servers []ServerSpec
	for _, s := range Servers {
		if s.InProcess && strings.HasPrefix(s.Name, "quotatest sliding") {
			servers = append(servers, s)
		}
	}
	servers = append(servers, httprateServer) // in-process, its windows started phase before the batch
	var scenarios []Scenario
	for _, sc := range Scenarios {
		if sc.Name != "half" {
			scenarios = append(scenarios, sc)
		}
	}
	var clients []ClientSpec
	for _, c := range Clients {
		if c.Headgate {
			clients = append(clients, c)
		}
	}
	for _, phase := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond, 980 * time.Millisecond, 990 * time.Millisecond} {
		for _, c := range Cells(servers, scenarios, clients) {
			t.Run(fmt.Sprintf("%v/%s", phase, cellKey(c)), func(t *testing.T) {
				t.Parallel()
				at, httprate := phase, c.Server.Name == httprateServer.Name
				if httprate {
					c.Server, at = inProcessAt(c.Server, phase), 0
				}
				r := runVirtualAt(t, c, at)
				if r.Phase != phase {
					t.Fatalf("phase recorded %v, want %v", r.Phase, phase)
				}
				if want := (slidingWindows{length: time.Second, rounds: httprate}).floor(Issue14, phase, c.Scenario.Pause); r.Floor != want {
					t.Fatalf("floor recorded %v, want %v", r.Floor, want)
				}
				var failed []string
				want := func(ok bool, format string, a ...any) {
					if !ok {
						failed = append(failed, fmt.Sprintf(format, a...))
					}
				}
				over := float64(r.Makespan) / float64(r.Floor)
				want(over <= 1.03, "makespan %v = %.3f× the floor %v, want ≤ 1.03×", r.Makespan, over, r.Floor)
				switch c.Scenario.Name {
				case "exact":
					want(r.RefusedPct() <= 0.5, "429s %.1f%%, want ≤ 0.5%%", r.RefusedPct())
				case "pause":
					want(r.IntoKnown == 0, "%d requests sent into the known pause, want 0", r.IntoKnown)
					want(r.RetrySeen && r.RetryDelay >= 0 && r.RetryDelay <= 20*time.Millisecond,
						"the refused call's retry came %v after the pause's end (seen %v), want within 20ms", r.RetryDelay, r.RetrySeen)
				case "learned":
					want(r.RefusedPct() <= 3, "429s %.1f%%, want ≤ 3%%", r.RefusedPct())
				case "2x":
					// Not held to the issue's ≤ 3 % here: configured with a
					// burst of twice the server's, the budget lets up to 200
					// go at the batch's first instant, and how many of them
					// reach the server before the first refusal comes back is the
					// bubble's scheduling: 2–4 mostly, up to 19 (3.8 %) in
					// some runs, at any phase. TestWantsInVirtualTime holds
					// the 2× cells to it.
				}
				if !c.Scenario.Learn && !r.KeptConfigured {
					t.Errorf("sent faster than the configured rate: %s", r.ConfiguredError)
				}
				want(r.Failed == 0, "%d calls failed", r.Failed)
				judge(t, failed, fmt.Sprintf("%s; floor %v (%.3f× ideal)", summary(r), r.Floor, r.FloorRatio()))
			})
		}
	}
}

// httprate starts its windows when its limiter is built, and names a
// window's end as a Unix second rounded down: built 685 or 863 ms past a
// whole second, its reset names an end that much before the window really
// turns, and reads as passed until then.
//
// Configured exactly, a batch begun 300–700 ms into such a window (a limiter
// that has run a while, as every production one has): a probe refused
// with the reset still passed honours the refusal's wait (passedReset)
// instead of probing again at every paced turn, each refusal read as the
// pace too fast down to MinRate (23–63 refusals and 1.51–1.61× the ideal
// without it); at 100/s, no more than the Limit a second, that refusal is
// the window's, not the pace's, and is not cut, and the wait's end is
// probed alone, its answer's Remaining (what the counter has had back
// since the turn) sent at once: within 1.03× the floor (1.18–1.34×
// without them). 3 refusals (0.6 %): the near miss, its probe, and one
// near miss of the counter's rounding later on, which this test allows.
//
// The pause begun with the batch just after the limiter is built (as the
// matrix's cells run over loopback): once the pause ends the burst spends
// the window, the reset reads passed, and its probe goes just after the
// turn the named ends predict — a window after the response that first
// named the next window's end (namedEnds) — not at the refusal's wait a
// second on (1.17× the ideal + pause without it; the floor 1.06×).
func TestHttprateOffTheSecond(t *testing.T) {
	t.Cleanup(func() { checkLedger(t, "TestHttprateOffTheSecond/") })
	exact, _ := ScenarioByName("exact")
	pause, _ := ScenarioByName("pause")
	for _, cl := range Clients {
		if !cl.Headgate {
			continue
		}
		for _, build := range []time.Duration{685 * time.Millisecond, 863 * time.Millisecond} {
			for _, phase := range []time.Duration{300 * time.Millisecond, 500 * time.Millisecond, 700 * time.Millisecond} {
				t.Run(fmt.Sprintf("exact/%s/%v/%v", cl.Name, build, phase), func(t *testing.T) {
					t.Parallel()
					r := runVirtualAt(t, Cell{Server: inProcessAt(httprateServer, phase), Scenario: exact, Client: cl}, build)
					if !r.KeptConfigured {
						t.Errorf("sent faster than the configured rate: %s", r.ConfiguredError)
					}
					var failed []string
					if r.Refused > 3 || r.Failed > 0 || r.Ratio() > 1.03*r.FloorRatio() {
						failed = append(failed, fmt.Sprintf("%d refusals (want ≤ 3), %d failed, configured bound kept %v, %.3f× the floor (want ≤ 1.03×)",
							r.Refused, r.Failed, r.KeptConfigured, r.Ratio()/r.FloorRatio()))
					}
					judge(t, failed, fmt.Sprintf("%s; floor %.3f×", summary(r), r.FloorRatio()))
				})
			}
			t.Run(fmt.Sprintf("pause/%s/%v", cl.Name, build), func(t *testing.T) {
				t.Parallel()
				r := runVirtualAt(t, Cell{Server: inProcessAt(httprateServer, 0), Scenario: pause, Client: cl}, build)
				if !r.KeptConfigured {
					t.Errorf("sent faster than the configured rate: %s", r.ConfiguredError)
				}
				var failed []string
				if r.IntoKnown > 0 || r.Failed > 0 || r.Ratio() > 1.03*r.FloorRatio() ||
					!r.RetrySeen || r.RetryDelay < 0 || r.RetryDelay > 20*time.Millisecond {
					failed = append(failed, fmt.Sprintf("%d into the known pause, %d failed, configured bound kept %v, %.3f× the floor (want ≤ 1.03×), retry %v after the pause (seen %v)",
						r.IntoKnown, r.Failed, r.KeptConfigured, r.Ratio()/r.FloorRatio(), r.RetryDelay, r.RetrySeen))
				}
				judge(t, failed, fmt.Sprintf("%s; floor %.3f×", summary(r), r.FloorRatio()))
			})
		}
	}
}
