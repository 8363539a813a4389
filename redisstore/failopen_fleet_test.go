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
// start at the rate the fleet last had (halved by a bare 429 before the
// pause: a pause says nothing of the pace), not the configured one.
func TestFailOpenFleetKeepsAPauseHeardThroughRedis(t *testing.T) {
	srv := ownRedis(t)
	key := testKey(t)
	var budgets []*core.Budget
	var stores []*Store
	for range 4 {
		s, err := New(newClient(t, srv.addr), key, WithFailOpen(0.25),
			WithTimeout(500*time.Millisecond), WithProbeInterval(50*time.Millisecond)) // see failOpenHelper
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
		budgets = append(budgets, core.MustBudget(core.PerSecond(100), core.WithBurst(4), core.WithStore(record(s))))
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
	p.Observe(http.StatusTooManyRequests, nil) // the pace too fast: the fleet's factor halves
	p.Release()
	told, heard := pauseThenKill(t, budgets[0], srv)
	killed := time.Now()
	time.Sleep(1500 * time.Millisecond) // still inside the 3 s pause
	for i, s := range stores[1:] {
		if s.Healthy() {
			t.Errorf("store %d is healthy with Redis killed", i+1)
		}
		d := budgets[i+1].PauseRemaining()
		if left := time.Until(told.Add(3 * time.Second)); d < left { // left as the call returned
			t.Errorf("budget %d: PauseRemaining with Redis down = %v, want the pause heard through Redis (%v left)", i+1, d, left)
		}
		// The fleet's factor: halved by the bare 429, then recovering with the
		// 200s that answered calls sent before it — how far depends on how
		// many a loaded machine delivered after the kill, so the check is
		// that the fallback took the fleet's factor, not the configured
		// rate (a factor of 1).
		if st, err := s.fb.status(context.Background()); err != nil || st.Factor >= 1 {
			t.Errorf("budget %d: the fallback's factor = %v (%v), want the fleet's, under 1: the rate the fleet had when Redis died", i+1, st.Factor, err)
		}
	}
	close(stop)
	var turns []core.Turn
	for _, w := range waits {
		for _, a := range w() {
			if a.err == nil {
				turns = append(turns, a.turn)
			}
		}
	}
	before, inside := checkPauseHeld(t, turns, heard, told.Add(3*time.Second), 12)
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
	told, heard := pauseThenKill(t, b, srv)
	var turns []core.Turn
	for _, h := range hs {
		for _, tr := range h.report(t).Turns {
			turns = append(turns, tr.turn())
		}
	}
	before, inside := checkPauseHeld(t, turns, heard, told.Add(3*time.Second), 12)
	t.Logf("the processes admitted %d calls before the 429 and %d inside the pause", before, inside)
	if before == 0 {
		t.Fatal("the processes admitted nothing before the 429: nothing to test")
	}
	if inside > 0 {
		t.Errorf("the processes admitted %d calls inside the pause; want none, with Redis up or down", inside)
	}
}

// checkPauseHeld checks that none of turns (admitted calls' turns, from
// Redis or a fallback, on their clock) falls inside a pause that Redis had
// by heard and that lasts until at least end, but for those reserved
// before heard: at most queued, one interval (10 ms) apart. Each turn is
// checked where the store put it, not when its call returned, so a loaded
// machine cannot make a call reserved before the pause look like one
// admitted inside it. It returns how many turns came before heard and how
// many inside the pause.
func checkPauseHeld(t *testing.T, turns []core.Turn, heard, end time.Time, queued int) (before, inside int) {
	t.Helper()
	reservedBy := heard.Add(time.Duration(queued) * 10 * time.Millisecond).UnixNano()
	for _, tr := range turns {
		switch {
		case tr.At < heard.UnixNano():
			before++
		case tr.At <= reservedBy:
		case tr.At < end.UnixNano():
			inside++
			t.Logf("a turn %v after the pause reached Redis (fallback: %v)", time.Duration(tr.At-heard.UnixNano()), tr.Fallback)
		}
	}
	return before, inside
}

// pauseThenKill has b hear a 3 s pause (a 429 with Retry-After: 3 whose
// quota returns only 2 s after it ends: the pace was too fast, and the
// fleet's factor is cut) and report it to Redis, then kills Redis half a
// second later. told is when
// the 429 was observed (the pause ends at least 3 s after it), heard when
// Redis had it.
func pauseThenKill(t *testing.T, b *core.Budget, srv *redisServer) (told, heard time.Time) {
	t.Helper()
	p, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	told = time.Now()
	p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"},
		"X-Ratelimit-Limit": {"4"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"5"}})
	heard = time.Now()
	time.Sleep(500 * time.Millisecond)
	srv.kill()
	return told, heard
}
