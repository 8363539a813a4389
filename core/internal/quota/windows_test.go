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

func TestWindowTurnsNoSoonerThanItsStatedEnd(t *testing.T) {
	ms := int64(1e6)
	var w windows
	// A window turned between a report decided at 6998 ms and a request
	// that left at 7000 ms and was answered at 7280 ms, the quickest
	// round trip 280 ms: the answer states, to the millisecond, that the
	// window ends at 14141 ms as read at its arrival, or 140 ms sooner
	// had the server stated it as a time from its decision.
	s := sample{seq: 89, sent: 7000 * ms, recv: 7280 * ms, at: 7140 * ms, remaining: 55}
	w.turned(6998*ms, s, [2]int64{14001 * ms, 14141 * ms}, ms)
	latest, _, ok := w.bracket(0, 0)
	if !ok || latest < 14141*ms {
		t.Errorf("the window turns at the latest at %d ms (placed: %v), want no sooner than the 14141 ms it may be stated to end at", latest/ms, ok)
	}
}

func TestWindowLengthIsTheLeastBound(t *testing.T) {
	ms := int64(1e6)
	var w windows
	// Two turns of a 4 s window, each stated to the millisecond: the
	// first right after a report, so its stated end bounds the length
	// closely; the second after the callers were idle for 8 s, so its end
	// bounds the length only loosely. A window lasts no longer than the
	// least bound.
	w.turned(990*ms, sample{seq: 10, sent: 1000 * ms, recv: 1020 * ms, at: 1010 * ms}, [2]int64{5000 * ms, 5010 * ms}, ms)
	w.turned(5010*ms, sample{seq: 20, sent: 13000 * ms, recv: 13020 * ms, at: 13010 * ms}, [2]int64{17000 * ms, 17010 * ms}, ms)
	if w.length < 4000*ms || w.length > 4021*ms {
		t.Errorf("a window lasts %d ms by the two turns' stated ends, want the 4021 ms the first allows at most, and no less than the 4000 it lasts", w.length/ms)
	}
}
