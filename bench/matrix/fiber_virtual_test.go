package matrix

import (
	"fmt"
	"testing"
	"time"
)

// TestFiberSlidingInVirtualTime runs every headgate client in every
// scenario against fiber's sliding-window rule (fiberRule) in virtual
// time, its clock ticking on the second and half a second past it, and
// holds each to what it must keep there: no call failed, nothing sent
// faster than the configured rate (half: exactly, no slack), nothing sent
// into a known pause and the refused call's retry within 20 ms of its
// end, no slot leaked — no run below the floor fiber_bound_test.go proves,
// which would show that floor wrong, and none more than 50 ms above it.
//
// The makespans are out of reach here (the floor is 2.00× the
// ideal, 2.25× for a client that does not know fiber's rule before its
// window 1; 1.67× after the pause). Headgate reaches the 2.25× and the
// 1.67×: it learns that fiber counts refusals from the probe a window
// after its refused one (admitted, yet short of the whole quota by that
// refusal), and from then waits out each spent window, probes once at its
// end and spends exactly what the probe's answer reports (99 and 1 in
// turn), never a refusal (core's watchCounted and allowance). With fiber's
// clock ticking half a second past the second the floor is 8.5 s; headgate
// ends at 9 s there too, its probes timed by fiber's whole-second
// Retry-After. (Before it learned this, 2.51×: the probe into each window
// after a spent one was refused, counted, and each pair of windows
// admitted 99.) Configured at half the rate, the budget's pace is the
// bound, not fiber's windows: not held to the floor.
func TestFiberSlidingInVirtualTime(t *testing.T) {
	t.Cleanup(func() { checkLedger(t, "TestFiberSlidingInVirtualTime/") })
	for _, phase := range []time.Duration{0, 500 * time.Millisecond} {
		server := fiberSlidingRule(phase)
		for _, sc := range Scenarios {
			for _, cl := range Clients {
				if !cl.Headgate {
					continue
				}
				c := Cell{Server: server, Scenario: sc, Client: cl}
				t.Run(phase.String()+"/"+sc.Name+"/"+cl.Name, func(t *testing.T) {
					t.Parallel()
					r := runVirtual(t, c)
					var failed []string
					fail := func(format string, a ...any) { failed = append(failed, fmt.Sprintf(format, a...)) }
					for _, b := range sane(sc, r) {
						t.Error(b)
					}
					switch {
					case !r.KeptConfigured && !sc.Learn:
						t.Errorf("sent faster than the configured rate: %s", r.ConfiguredError)
					case !r.KeptConfigured:
						fail("sent faster than the server's own rate and burst: %s", r.ConfiguredError)
					}
					if r.Failed > 0 {
						fail("%d calls failed", r.Failed)
					}
					// φ: how far into fiber's window 0 the batch starts.
					phi := (time.Second - phase) % time.Second
					// What headgate reaches: the 2.25× floor, 9 s, within 50 ms
					// (its probes' round trips), whatever φ.
					const reached = 9*time.Second + 50*time.Millisecond
					switch {
					case sc.Pause:
						if r.IntoKnown > 0 {
							fail("%d requests sent into the known pause", r.IntoKnown)
						}
						if !r.RetrySeen || r.RetryDelay < 0 || r.RetryDelay > 20*time.Millisecond {
							fail("the refused call's retry came %v after the pause's end (seen %v), want within 20ms", r.RetryDelay, r.RetrySeen)
						}
						if floor := 10*time.Second - phi; r.Makespan < floor {
							fail("makespan %v, below the floor %v", r.Makespan, floor)
						}
						if r.Makespan > reached+time.Second {
							fail("makespan %v, want within 50ms of the floor %v", r.Makespan, 10*time.Second)
						}
					case sc.Factor >= 1:
						if floor := 8*time.Second - phi; r.Makespan < floor {
							fail("makespan %v, below the floor %v", r.Makespan, floor)
						}
						if r.Makespan > reached {
							fail("makespan %v, want within 50ms of the floor %v for a client that must learn the rule", r.Makespan, 9*time.Second)
						}
					}
					judge(t, failed, summary(r))
				})
			}
		}
	}
}
