package matrix

import (
	"fmt"
	"testing"
	"time"
)

// TestFiberFixedTurnInTheFirstBurst runs the learned scenario on fiber's
// fixed window (fiberFixedRule) with its clock ticking just after the
// batch starts: the window turns while the lone first call is on its way
// back or the burst its answer sends is on its way out, so the first call
// and the first of the burst both find the quota whole. Over loopback a
// cell starts anywhere in fiber's second; this is where it once drew 3.2–
// 3.4 % 429s (10–17), above the 3 %: the learning budget read the
// two whole reports, 0.5–2 ms apart, as a server refilling faster than
// its pace and doubled its rate, sending a second quota into the fresh
// window (core: learnRefillLocked). With no rate configured, a fixed
// window draws one refusal (the probe that finds the first window spent);
// held here to 2, and to the 1.15× the ideal.
func TestFiberFixedTurnInTheFirstBurst(t *testing.T) {
	var learned Scenario
	for _, sc := range Scenarios {
		if sc.Name == "learned" {
			learned = sc
		}
	}
	for _, way := range []time.Duration{500 * time.Microsecond, time.Millisecond} {
		for phase := 250 * time.Microsecond; phase <= 3*time.Millisecond; phase += 250 * time.Microsecond {
			for _, cl := range Clients {
				if !cl.Headgate {
					continue
				}
				// Each cell its own bubble, sharing nothing: they run side by side.
				t.Run(fmt.Sprintf("%v/%v/%s", way, phase, cl.Name), func(t *testing.T) {
					t.Parallel()
					r := runVirtual(t, Cell{Server: fiberFixedRule(phase, way), Scenario: learned, Client: cl})
					for _, b := range sane(learned, r) {
						t.Errorf("tick %v, way %v, %s: %s", phase, way, cl.Name, b)
					}
					var failed []string
					if r.Failed > 0 || r.Refused > 2 || r.Ratio() > 1.15 {
						failed = append(failed, fmt.Sprintf("tick %v after the start, way %v, %s: %s; want no failed call, at most 2 429s, ≤ 1.15× the ideal",
							phase, way, cl.Name, summary(r)))
					}
					judge(t, failed, summary(r))
				})
			}
		}
	}
}
