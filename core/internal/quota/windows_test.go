package quota

import "testing"

func TestWindowTurnsNoSoonerThanItsLatestStart(t *testing.T) {
	ms := int64(1e6)
	var w windows
	// A window starts at its first request. That request left at 1000 ms
	// and its answer came at 1060 ms, the quickest round trip being 20 ms
	// (at: sent + 10 ms): the server started the window between 1010 and
	// 1050 ms, and it ends a second later.
	s := sample{seq: 11, sent: 1000 * ms, recv: 1060 * ms, at: 1010 * ms, remaining: 9}
	w.turned(400*ms, s, [2]int64{}, 0)
	latest, _, ok := w.bracket(Second, 0)
	if !ok || latest < 2050*ms {
		t.Errorf("the window turns at the latest at %d ms (placed: %v), want 2050 ms: its start may be as late as the answer's way back allows", latest/ms, ok)
	}
}
