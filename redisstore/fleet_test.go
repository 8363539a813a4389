package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// TestFleetOfFourProcessesSpendsOneBudget: four OS processes, each with a
// PerSecond(200) budget on one Redis key, send as fast as their budgets let
// them for 5 s to one provider. The provider sees one budget's pace, not
// four: the processes' merged send times obey GCRA's bound for burst 200
// at 5 ms (with 10 ms of slack for scheduling), the provider — enforcing
// the same rate with room for 100 ms of network jitter — refuses nothing,
// and the rate after the burst is within 20% of 200/s (real processes on a
// machine that may be loaded: core's TestSynctestFleetOnOneStoreSpendsOneBudget
// holds the 5% bound in virtual time, on the MemoryStore these scripts are
// checked against).
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
	// The provider enforces the same rate, with room for 20 intervals of
	// network jitter, so a refusal means the fleet overspent by more.
	srv, err := quotatest.NewServer(quotatest.Config{Requests: rate, Period: time.Second, Burst: burst + 20})
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
	ok := 0
	var sends []time.Time
	for i, h := range hs {
		r := h.report(t)
		t.Logf("process %d: %d sent, %d refused, %d errors", i, r.OK, r.Refused, r.Errors)
		for _, at := range r.Sends {
			sends = append(sends, time.Unix(0, at))
		}
		if r.Errors > 0 {
			t.Errorf("process %d: %d transport errors, first: %s", i, r.Errors, r.FirstError)
		}
		if r.OK == 0 {
			t.Errorf("process %d sent nothing: the fleet is not sharing fairly enough to test", i)
		}
		ok += r.OK
	}
	arrivals := srv.Arrivals()
	if err := quotatest.CheckTimes(sends, burst, interval, 10*time.Millisecond); err != nil {
		t.Errorf("the fleet's merged send times break one budget's bound: %v", err)
	}
	if n := srv.Refused(); n > 0 {
		t.Errorf("the provider refused %d requests", n)
	}
	got := float64(len(arrivals)-burst) / dur.Seconds()
	t.Logf("%d requests from %d processes in %v: %.1f/s after the burst of %d (one budget: %d/s)", len(arrivals), procs, dur, got, burst, rate)
	if got < rate*0.8 || got > rate*1.05 {
		t.Errorf("throughput %.1f/s after the burst, want within 20%% below (5%% above) %d/s", got, rate)
	}
	if ok > len(arrivals) {
		t.Errorf("processes report %d admitted, the provider saw only %d arrivals", ok, len(arrivals))
	}
}

// TestFleetPauseFromOneProcessStopsTheOthers: three processes share a
// budget. One calls an API that starts a pause; the two others call
// another that never refuses. The first process's 429 pauses the fleet
// through Redis: the others send at most the one request whose turn each
// had already reserved (one round trip), then nothing until the pause is
// over, then they resume.
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
	paused.PauseFor(pause)
	pauseEnd := time.Now().Add(pause)
	for _, h := range hs {
		h.report(t)
	}
	var t1 time.Time
	for _, a := range paused.Arrivals() {
		if a.Outcome == quotatest.RefusedPause {
			t1 = a.At
			break
		}
	}
	if t1.IsZero() {
		t.Fatal("the first process sent nothing during the pause")
	}
	var during []string
	var resumed time.Time
	for _, a := range other.Arrivals() {
		switch {
		case a.At.Before(t1):
		case a.At.Before(pauseEnd):
			during = append(during, a.At.Sub(t1).String())
			if a.At.Sub(t1) > 3*interval {
				t.Errorf("another process sent %v after the 429, later than any turn reserved before it", a.At.Sub(t1))
			}
		case resumed.IsZero():
			resumed = a.At
		}
	}
	t.Logf("429 at %v into the run; the others sent %v after it, and resumed %v after the pause", t1.Sub(start), during, resumed.Sub(pauseEnd))
	if len(during) > procs-1 {
		t.Errorf("the other processes sent %d requests during the pause, want at most %d (one reserved turn each): %v",
			len(during), procs-1, during)
	}
	if resumed.IsZero() {
		t.Error("the other processes sent nothing after the pause")
	}
}
