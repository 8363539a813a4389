package redisstore

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
)

// TestFailOpenFleetKeepsAPauseHeardThroughRedis: four budgets — each with
// its own client and store, as four processes have — share one key,
// failing open at a quarter each. One hears a 429 with Retry-After: 3;
// Redis is killed 0.5 s later. The three others learned the pause only
// from Redis's replies (they never saw the 429), yet their fallbacks must
// hold it: none admits a call until the pause is over. Their fallbacks also
// start at the rate the fleet last had (halved by the 429), not the
// configured one.
func TestFailOpenFleetKeepsAPauseHeardThroughRedis(t *testing.T) {
	srv := ownRedis(t)
	key := testKey(t)
	var budgets []*core.Budget
	var stores []*Store
	for range 4 {
		s, err := New(newClient(t, srv.addr), key, WithFailOpen(0.25),
			WithTimeout(100*time.Millisecond), WithProbeInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
		budgets = append(budgets, core.MustBudget(core.PerSecond(100), core.WithBurst(4), core.WithStore(s)))
	}
	stop := make(chan struct{})
	var waits []func() []admission
	for _, b := range budgets[1:] {
		waits = append(waits, load(b, stop))
	}
	time.Sleep(300 * time.Millisecond) // the others are admitting through Redis
	p, err := budgets[0].Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}})
	heard := time.Now()
	time.Sleep(500 * time.Millisecond)
	srv.kill()
	killed := time.Now()
	time.Sleep(1500 * time.Millisecond) // still inside the 3 s pause
	for i, s := range stores[1:] {
		if s.Healthy() {
			t.Errorf("store %d is healthy with Redis killed", i+1)
		}
		if d := budgets[i+1].PauseRemaining(); d < 500*time.Millisecond {
			t.Errorf("budget %d: PauseRemaining with Redis down = %v, want the pause heard through Redis (about 1s left)", i+1, d)
		}
		// The fleet's factor: halved by the 429, recovered a little by
		// the 200s that answered calls sent before it.
		if st, err := s.fb.status(context.Background()); err != nil || st.Factor > 0.6 {
			t.Errorf("budget %d: the fallback's factor = %v (%v), want about 0.5: the rate the fleet had when Redis died", i+1, st.Factor, err)
		}
	}
	close(stop)
	var before, inside int
	for _, w := range waits {
		for _, a := range w() {
			switch {
			case a.err != nil:
			case a.at.Before(heard):
				before++
			// A turn reserved before Redis heard the 429 may still go (a
			// round trip, generous on a loaded machine); calls waiting at
			// the end of the run are admitted when the pause is over.
			case a.at.After(heard.Add(250*time.Millisecond)) && a.at.Before(heard.Add(2900*time.Millisecond)):
				inside++
				t.Logf("admitted %v after the 429", a.at.Sub(heard))
			}
		}
	}
	t.Logf("the other budgets admitted %d before the 429 and %d inside the pause (Redis killed %v after it)",
		before, inside, killed.Sub(heard))
	if before == 0 {
		t.Fatal("the other budgets admitted nothing before the 429: nothing to test")
	}
	if inside > 0 {
		t.Errorf("the other budgets admitted %d calls inside the pause; want none, with Redis up or down", inside)
	}
}

// TestFailOpenFleetOfProcessesKeepsThePause is the same with three OS
// processes: this test's budget hears the 429 with Retry-After: 3, Redis
// is killed 0.5 s later, and the processes — which learned of the pause
// only through Redis — admit nothing until it ends.
func TestFailOpenFleetOfProcessesKeepsThePause(t *testing.T) {
	srv := ownRedis(t)
	key := testKey(t)
	start := time.Now().Add(time.Second)
	var hs []*helper
	for range 3 {
		hs = append(hs, startHelper(t, "failopen", map[string]string{
			"ADDR": srv.addr, "KEY": key, "RATE": "100",
			"START": strconv.FormatInt(start.UnixNano(), 10), "DUR": "2500ms",
		}))
	}
	s, err := New(newClient(t, srv.addr), key, WithFailOpen(0.25), WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b := core.MustBudget(core.PerSecond(100), core.WithBurst(4), core.WithStore(s))
	time.Sleep(time.Until(start.Add(300 * time.Millisecond))) // the processes admit through Redis
	p, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}})
	heard := time.Now()
	time.Sleep(500 * time.Millisecond)
	srv.kill()
	var before, inside int
	for i, h := range hs {
		r := h.report(t)
		for _, ns := range r.Sends {
			at := time.Unix(0, ns)
			switch {
			case at.Before(heard):
				before++
			case at.After(heard.Add(250*time.Millisecond)) && at.Before(heard.Add(2900*time.Millisecond)):
				inside++
				t.Logf("process %d admitted a call %v after the 429", i, at.Sub(heard))
			}
		}
	}
	t.Logf("the processes admitted %d calls before the 429 and %d inside the pause", before, inside)
	if before == 0 {
		t.Fatal("the processes admitted nothing before the 429: nothing to test")
	}
	if inside > 0 {
		t.Errorf("the processes admitted %d calls inside the pause; want none, with Redis up or down", inside)
	}
}
