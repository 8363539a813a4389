package matrix

import (
	"testing"
	"time"
)

// TestFiberSlidingInVirtualTime runs every headgate client in every
// scenario against fiber's sliding-window rule (fiberRule) in virtual
// time, its clock ticking on the second and half a second past it, and
// holds each to what it must keep there: no call failed, nothing sent
// faster than told (half: exactly, no slack), nothing sent into a known
// pause and the refused call's retry within 20 ms of its end, no slot
// leaked — and no run below the floor fiber_bound_test.go proves, which
// would show that floor wrong.
//
// What it does not hold them to is the makespans, out of reach
// here (the floor is 2.00× the ideal, 2.25× for a client that does not
// know fiber's rule before its window 1; 1.67× after the pause). Headgate
// ends at 2.51×: fiber refuses the probe it sends into each window that
// follows a spent one, whose quota comes back only after a window with no
// requests at all (on a fixed or a true sliding window it would be
// admitted), and counts it, so each pair of windows admits 99 and the
// batch's last calls wait one pair more. After the pause, 1.75–1.83×:
// at the pause's end a third of the fresh window goes at once and the
// rest at the pace, 0.7 s, as the quota reports cap what goes at once
// (without the cap 1.67×, but 14 % 429s).
func TestFiberSlidingInVirtualTime(t *testing.T) {
	for _, phase := range []time.Duration{0, 500 * time.Millisecond} {
		server := fiberSlidingRule(phase)
		for _, sc := range Scenarios {
			for _, cl := range Clients {
				if !cl.Headgate {
					continue
				}
				c := Cell{Server: server, Scenario: sc, Client: cl}
				t.Run(phase.String()+"/"+sc.Name+"/"+cl.Name, func(t *testing.T) {
					r := runVirtual(t, c)
					t.Log(summary(r))
					for _, b := range sane(sc, r) {
						t.Error(b)
					}
					if r.Failed > 0 {
						t.Errorf("%d calls failed", r.Failed)
					}
					if !r.Told {
						t.Errorf("sent faster than told: %s", r.ToldError)
					}
					// φ: how far into fiber's window 0 the batch starts.
					phi := (time.Second - phase) % time.Second
					switch {
					case sc.Pause:
						if r.IntoKnown > 0 {
							t.Errorf("%d requests sent into the known pause", r.IntoKnown)
						}
						if !r.RetrySeen || r.RetryDelay < 0 || r.RetryDelay > 20*time.Millisecond {
							t.Errorf("the refused call's retry came %v after the pause's end (seen %v), want within 20ms", r.RetryDelay, r.RetrySeen)
						}
						if floor := 10*time.Second - phi; r.Makespan < floor {
							t.Errorf("makespan %v, below the floor %v", r.Makespan, floor)
						}
					case sc.Factor >= 1:
						if floor := 8*time.Second - phi; r.Makespan < floor {
							t.Errorf("makespan %v, below the floor %v", r.Makespan, floor)
						}
					}
				})
			}
		}
	}
}
