package matrix

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// TestNewDrawReplays: a draw is a function of its seed and index alone,
// and draws differ.
func TestNewDrawReplays(t *testing.T) {
	seed := theSeed(t)
	t.Logf("seed %d", seed)
	if a, b := NewDraw(seed, 7), NewDraw(seed, 7); a != b {
		t.Fatalf("draw 7 twice:\n%v\n%v", a, b)
	}
	if a, b := NewDraw(seed, 7), NewDraw(seed, 8); a == b {
		t.Fatalf("draws 7 and 8 alike: %v", a)
	}
	if a, b := NewDraw(seed, 7), NewDraw(seed+1, 7); a == b {
		t.Fatalf("draw 7 of two seeds alike: %v", a)
	}
}

// TestNewDrawRanges: over many draws of a fresh seed, every dimension
// stays in the ranges and takes every value it should.
func TestNewDrawRanges(t *testing.T) {
	seed := theSeed(t)
	t.Logf("seed %d", seed)
	seen := map[string]bool{}
	for k := range 3000 {
		d := NewDraw(seed, k)
		bad := func(format string, a ...any) { t.Fatalf("%v: "+format, append([]any{d}, a...)...) }
		if _, err := quotatest.New(d.config()); err != nil {
			bad("server: %v", err)
		}
		seen["alg "+d.Algorithm.String()] = true
		if d.windowed() {
			if d.Window < time.Second || d.Window > 10*time.Second || d.Window%time.Second != 0 {
				bad("window %v, want 1–10 s", d.Window)
			}
			if d.Limit < 20 || d.Limit > 120 || d.Burst != d.Limit {
				bad("limit %d burst %d, want 20–120 per window", d.Limit, d.Burst)
			}
			if d.Calls < 2*d.Limit || d.Calls > maxFamilyCalls {
				bad("%d calls, want 2 windows' worth to %d", d.Calls, maxFamilyCalls)
			}
		} else {
			if d.Window != time.Second || d.Limit < 20 || d.Limit > 200 || d.Burst < 1 || d.Burst > d.Limit {
				bad("rate %d per %v burst %d, want 20–200/s, burst 1 to the rate", d.Limit, d.Window, d.Burst)
			}
			if d.Calls <= d.Burst || d.Calls > maxFamilyCalls {
				bad("%d calls, want more than the burst, at most %d", d.Calls, maxFamilyCalls)
			}
		}
		if d.Latency < 0 || d.Latency > 150*time.Millisecond || d.Jitter < 0 || d.Jitter > min(d.Latency, 50*time.Millisecond) {
			bad("latency %v jitter %v", d.Latency, d.Jitter)
		}
		if d.Clients < 1 || d.Clients > 8 || d.Phase < 0 || d.Phase >= 10*time.Second || d.Workers != familyWorkers {
			bad("clients %d phase %v workers %d", d.Clients, d.Phase, d.Workers)
		}
		seen["headers "+headersText(d.Headers)] = true
		seen[d.Configured.phrase()] = true
		seen["sharing "+d.Sharing()] = true
		seen[fmt.Sprintf("deadlines %d", d.Deadlines)] = true
		seen[fmt.Sprintf("clients %d", d.Clients)] = true
		seen[fmt.Sprintf("jitter %v", d.Jitter > 0)] = true
	}
	var want []string
	for _, a := range []string{"GCRA", "TokenBucket", "FixedWindow", "FirstRequestWindow", "SlidingWindow", "SlidingLog"} {
		want = append(want, "alg "+a)
	}
	for _, h := range []string{"IETF RateLimit (t delta seconds)", "X-RateLimit-Reset delta seconds", "X-RateLimit-Reset epoch seconds",
		"X-RateLimit-Reset epoch ms", "X-RateLimit-Reset HTTP date"} {
		for _, r := range []string{"rounded up", "rounded down", "rounded to nearest"} {
			for _, ra := range []string{"Retry-After", "no Retry-After"} {
				want = append(want, "headers "+h+", "+r+", "+ra)
			}
		}
	}
	want = append(want, "headers no quota header, Retry-After", "headers no rate-limit header at all",
		"configured at the exact limit", "configured at 2× the limit", "configured at ½ the limit", "no rate configured", "sharing 1", "sharing 2–4", "sharing 5–8",
		"deadlines 0", "deadlines 1", "deadlines 2", "jitter true", "jitter false")
	for c := 1; c <= 8; c++ {
		want = append(want, fmt.Sprintf("clients %d", c))
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("never drawn in 3000 draws: %s", w)
		}
	}
}

// draw is a hand-made draw: one client, no rate configured, no latency,
// unless edit says otherwise.
func draw(alg quotatest.Algorithm, limit int, window time.Duration, burst, calls int, edit func(*Draw)) Draw {
	d := Draw{Algorithm: alg, Limit: limit, Window: window, Burst: burst, Headers: quotatest.XRateLimitDelta | quotatest.RetryAfterSeconds,
		Clients: 1, Configured: ConfiguredNone, Calls: calls, Workers: familyWorkers}
	if edit != nil {
		edit(&d)
	}
	return d
}

// TestFamilyIdeal checks the ideal on draws worked out by hand.
func TestFamilyIdeal(t *testing.T) {
	const s = time.Second
	ms := time.Millisecond
	configured := func(c Configured, clients int) func(*Draw) {
		return func(d *Draw) { d.Configured, d.Clients = c, clients }
	}
	tests := []struct {
		name string
		d    Draw
		want time.Duration
	}{
		// 10 at once, then one every 10 ms.
		{"GCRA", draw(quotatest.GCRA, 100, s, 10, 110, nil), s},
		{"TokenBucket", draw(quotatest.TokenBucket, 100, s, 10, 110, nil), s},
		// Plus a round trip at the wire's slowest: 2 × (50 + 10) ms.
		{"GCRA over a wire", draw(quotatest.GCRA, 100, s, 10, 110, func(d *Draw) { d.Latency, d.Jitter = 50*ms, 10*ms }), s + 120*ms},
		{"GCRA configured exactly", draw(quotatest.GCRA, 100, s, 10, 110, configured(ConfiguredExact, 1)), s},
		// Configured at half: 5 at once, then one every 20 ms.
		{"GCRA configured at half", draw(quotatest.GCRA, 100, s, 10, 110, configured(ConfiguredHalf, 1)), 2100 * ms},
		// Two clients configured at half: 5 each at once, then each one
		// every 20 ms from 20 ms; the server's slot at 10 ms comes back as
		// burst, so it admits both: together they keep the server's pace.
		{"GCRA configured at half, two clients", draw(quotatest.GCRA, 100, s, 10, 110, configured(ConfiguredHalf, 2)), s},
		// Configured at half, three clients on a burst of 4 (2 each): 6 at
		// once are 2 over the server's burst, so the third client's burst
		// waits.
		{"GCRA configured at half, three clients", draw(quotatest.GCRA, 100, s, 4, 64, configured(ConfiguredHalf, 3)), 600 * ms},
		// Windows from 300 ms into a second: 100 there, 100 at 1 s, 50 at 2 s.
		{"fixed windows", draw(quotatest.FixedWindow, 100, s, 100, 250, func(d *Draw) { d.Phase = 300 * ms }), 1700 * ms},
		// Configured exactly, a GCRA of 100/s: 70 tokens back by 1 s, 30
		// more by 1.3 s; 70 again by 2 s, for the last 50.
		{"fixed windows configured exactly", draw(quotatest.FixedWindow, 100, s, 100, 250, func(d *Draw) { d.Phase, d.Configured = 300*ms, ConfiguredExact }), 1700 * ms},
		// Windows from the first request: 300 ms, 1.3 s, 2.3 s.
		{"first-request windows", draw(quotatest.FirstRequestWindow, 100, s, 100, 250, func(d *Draw) { d.Phase = 300 * ms }), 2 * s},
		{"sliding log", draw(quotatest.SlidingLog, 100, s, 100, 250, func(d *Draw) { d.Phase = 300 * ms }), 2 * s},
		// A window of 3 s aligned to the clock: the batch starts 1 s into one.
		{"fixed windows of 3 s", draw(quotatest.FixedWindow, 20, 3*s, 20, 50, func(d *Draw) { d.Phase = s }), 5 * s},
	}
	for _, tt := range tests {
		if tt.d.Phase == 0 && tt.d.Algorithm == quotatest.FixedWindow {
			t.Fatalf("%s: give a fixed-window draw a phase", tt.name)
		}
		got, err := tt.d.ideal()
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%s: ideal %v, want %v (%v)", tt.name, got, tt.want, tt.d)
		}
	}
}

// TestFamilyIdealSlidingIsTheFloor: on a sliding-window counter the ideal
// is floor.go's floor, worked out there in integer nanoseconds apart from
// quotatest's limiter.
func TestFamilyIdealSlidingIsTheFloor(t *testing.T) {
	for _, phase := range []time.Duration{0, 250 * time.Millisecond, 900 * time.Millisecond} {
		d := draw(quotatest.SlidingWindow, 100, time.Second, 100, 500, func(d *Draw) { d.Phase = phase })
		got, err := d.ideal()
		if err != nil {
			t.Fatal(err)
		}
		// FamilyStart is on a whole second, where quotatest's windows turn.
		floor := slidingWindows{origin: FamilyStart, length: time.Second}.floor(Workload{N: 500, Rate: 100}, phase, false)
		if diff := got - floor; diff < -time.Millisecond || diff > time.Millisecond {
			t.Errorf("phase %v: ideal %v, floor %v", phase, got, floor)
		}
		if d.pace() != 4*time.Second || got < d.pace() {
			t.Errorf("phase %v: pace %v, want 4s and under the ideal %v", phase, d.pace(), got)
		}
	}
}

// TestFamilyGreedyIsAdmitted plays the greedy schedule against each
// algorithm's server, in virtual time: every call sent at its instant is
// admitted, so the ideal is a makespan a client can reach.
func TestFamilyGreedyIsAdmitted(t *testing.T) {
	for _, alg := range []quotatest.Algorithm{quotatest.GCRA, quotatest.TokenBucket, quotatest.FixedWindow,
		quotatest.FirstRequestWindow, quotatest.SlidingWindow, quotatest.SlidingLog} {
		d := draw(alg, 30, 2*time.Second, 30, 100, func(d *Draw) { d.Phase = 1300 * time.Millisecond })
		if !d.windowed() {
			d.Window, d.Burst = time.Second, 7
		}
		t.Run(alg.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(time.Until(FamilyStart.Add(d.Phase)))
				at, err := d.greedy(time.Now())
				if err != nil {
					t.Fatal(err)
				}
				p, err := quotatest.New(d.config())
				if err != nil {
					t.Fatal(err)
				}
				hc := p.Client()
				var wg sync.WaitGroup
				for i, a := range at {
					wg.Go(func() {
						time.Sleep(time.Until(a))
						if resp, err := get(context.Background(), hc, "http://api.invalid"+callPath(i)); err != nil || resp.StatusCode != http.StatusOK {
							t.Errorf("call %d at +%v: %v %v", i, a.Sub(at[0]), resp.StatusCode, err)
						}
					})
				}
				wg.Wait()
				if p.Admitted() != d.Calls {
					t.Errorf("admitted %d of %d", p.Admitted(), d.Calls)
				}
			})
		})
	}
}

// TestJitterWire: each leg waits its own delay, latency plus up to the
// jitter, the same for a call's try whatever the order; answers overtake.
func TestJitterWire(t *testing.T) {
	const lat, jit = 40 * time.Millisecond, 30 * time.Millisecond
	w := newJitterWire(nil, lat, jit, 42)
	distinct := map[time.Duration]bool{}
	for call := range 200 {
		for try := range 3 {
			for leg := range 2 {
				d := w.delay(call, try, leg)
				if d < lat || d > lat+jit {
					t.Fatalf("delay(%d, %d, %d) = %v, want %v–%v", call, try, leg, d, lat, lat+jit)
				}
				if d != newJitterWire(nil, lat, jit, 42).delay(call, try, leg) {
					t.Fatalf("delay(%d, %d, %d) differs between two wires of one seed", call, try, leg)
				}
				distinct[d] = true
			}
		}
	}
	if len(distinct) < 1000 {
		t.Errorf("%d distinct delays of 1200 legs: not spread over the jitter", len(distinct))
	}
	if d := newJitterWire(nil, lat, 0, 42).delay(5, 0, 1); d != lat {
		t.Errorf("no jitter: delay %v, want %v", d, lat)
	}
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		arrived := map[int]time.Time{}
		server := handlerTransport{http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			mu.Lock()
			arrived[callOf(r.URL.Path)] = time.Now()
			mu.Unlock()
		})}
		w := newJitterWire(server, lat, jit, 42)
		hc := &http.Client{Transport: w}
		start := time.Now()
		var order []int
		var wg sync.WaitGroup
		for call := range 20 {
			wg.Go(func() {
				if _, err := get(context.Background(), hc, "http://api.invalid"+callPath(call)); err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if got, want := arrived[call].Sub(start), w.delay(call, 0, 0); got != want {
					t.Errorf("call %d reached the server after %v, want %v", call, got, want)
				}
				if got, want := time.Since(start), w.delay(call, 0, 0)+w.delay(call, 0, 1); got != want {
					t.Errorf("call %d answered after %v, want %v", call, got, want)
				}
				order = append(order, call)
			})
		}
		wg.Wait()
		inOrder := true
		for i := 1; i < len(order); i++ {
			inOrder = inOrder && order[i] > order[i-1]
		}
		if inOrder {
			t.Errorf("answers in send order %v: nothing overtook", order)
		}
		again := time.Now() // call 3's second try: its own delays
		if _, err := get(context.Background(), hc, "http://api.invalid"+callPath(3)); err != nil {
			t.Fatal(err)
		}
		if got, want := arrived[3].Sub(again), w.delay(3, 1, 0); got != want {
			t.Errorf("call 3's second try reached the server after %v, want %v", got, want)
		}
	})
}

func TestDist(t *testing.T) {
	var vals []float64
	var draws []int
	for i := 20; i >= 1; i-- { // out of order
		vals = append(vals, float64(i))
		draws = append(draws, 100+i)
	}
	if got, want := dist(vals, draws), (Dist{P50: 10, P95: 19, Worst: 20, WorstDraw: 120}); got != want {
		t.Errorf("dist(1..20) = %+v, want %+v", got, want)
	}
	if got, want := dist([]float64{3}, []int{4}), (Dist{P50: 3, P95: 3, Worst: 3, WorstDraw: 4}); got != want {
		t.Errorf("dist(3) = %+v, want %+v", got, want)
	}
}

// result is a synthetic result of draw k of class configured × clients.
func result(k int, configured Configured, clients int, hg, bl Outcome) DrawResult {
	return DrawResult{Draw: Draw{Index: k, Configured: configured, Clients: clients, Calls: 1000, Algorithm: quotatest.GCRA, Limit: 100, Window: time.Second, Burst: 10},
		Ideal: 10 * time.Second, Headgate: hg, Baseline: bl}
}

func TestFamilyMisses(t *testing.T) {
	good := Outcome{Refused: 1, Makespan: 10 * time.Second}
	var rs []DrawResult
	for k := range 20 {
		for _, tl := range []Configured{ConfiguredExact, Configured2x, ConfiguredHalf, ConfiguredNone} {
			for _, c := range []int{1, 3, 6} {
				rs = append(rs, result(len(rs), tl, c, good, good))
			}
		}
		_ = k
	}
	if m := FamilyMisses(rs); len(m) != 0 {
		t.Fatalf("misses on a family within the wants:\n%s", MissTable(m))
	}
	edit := func(configured Configured, clients int, n int, f func(*DrawResult)) []DrawResult {
		out := append([]DrawResult(nil), rs...)
		for i := range out {
			if out[i].Draw.Configured == configured && out[i].Draw.Clients == clients && n > 0 {
				f(&out[i])
				n--
			}
		}
		return out
	}
	for _, tt := range []struct {
		name string
		rs   []DrawResult
		want string // in the miss table; "" for none
	}{
		// 2 of 20 draws over: the 95th percentile (the 19th) is over.
		{"exact 429s", edit(ConfiguredExact, 1, 2, func(r *DrawResult) { r.Headgate.Refused, r.Baseline.Refused = 6, 6 }), "| configured at the exact limit · 1 client (20 draws) | p95 429 % | 0.60 | ≤ 0.5 |"},
		// 1 of 20: the 95th percentile is not.
		{"exact 429s, one draw", edit(ConfiguredExact, 1, 1, func(r *DrawResult) { r.Headgate.Refused, r.Baseline.Refused = 6, 6 }), ""},
		{"2× makespan", edit(Configured2x, 1, 2, func(r *DrawResult) { r.Headgate.Makespan = 13 * time.Second }), "| configured at 2× the limit · 1 client (20 draws) | p95 makespan ÷ ideal | 1.300 | ≤ 1.20 |"},
		{"none makespan", edit(ConfiguredNone, 1, 2, func(r *DrawResult) { r.Headgate.Makespan = 11600 * time.Millisecond }), "| no rate configured · 1 client (20 draws) | p95 makespan ÷ ideal | 1.160 | ≤ 1.15 |"},
		{"four budgets", edit(ConfiguredExact, 3, 2, func(r *DrawResult) { r.Headgate.Refused, r.Baseline.Refused = 51, 60 }), "| configured at the exact limit · 2–4 clients (20 draws) | p95 429 % | 5.10 | ≤ 5.0 |"},
		{"eight budgets are not held", edit(ConfiguredExact, 6, 20, func(r *DrawResult) { r.Headgate.Refused, r.Baseline.Refused = 500, 600 }), ""},
		{"half is not held", edit(ConfiguredHalf, 1, 20, func(r *DrawResult) { r.Headgate.Refused, r.Baseline.Refused = 500, 600 }), ""},
		{"more than the baseline", edit(ConfiguredHalf, 6, 1, func(r *DrawResult) { r.Headgate.Refused = 2 }), "| every draw | more 429s than the baseline | 1 draws | 0 draws |"},
		{"faster than configured", edit(Configured2x, 3, 1, func(r *DrawResult) { r.Headgate.ConfiguredBroken = 1 }), "| every draw with a configured rate | clients that sent faster than their configured rate | 1 draws |"},
		{"learning has no configured rate to break", edit(ConfiguredNone, 3, 1, func(r *DrawResult) { r.Headgate.ConfiguredBroken = 1 }), ""},
		{"deadline no rate configured", edit(ConfiguredNone, 6, 1, func(r *DrawResult) { r.Headgate.Deadline = 3 }), "| every draw with no rate configured | calls failed for a deadline the server's rate meets | 1 draws |"},
		{"deadline configured exactly", edit(ConfiguredExact, 1, 1, func(r *DrawResult) { r.Headgate.Deadline = 3 }), "| configured at the exact limit · 1 client (20 draws) | calls failed for a deadline the server's rate meets | 1 draws | 0 draws | #0 (3) |"},
		{"deadline configured at half is not held", edit(ConfiguredHalf, 1, 1, func(r *DrawResult) { r.Headgate.Deadline = 3 }), ""},
	} {
		table := MissTable(FamilyMisses(tt.rs))
		switch {
		case tt.want == "" && strings.Count(table, "\n") > 2:
			t.Errorf("%s: misses:\n%s", tt.name, table)
		case tt.want != "" && !strings.Contains(table, tt.want):
			t.Errorf("%s: no %q in\n%s", tt.name, tt.want, table)
		}
	}
}

// TestConfiguredBroken: each client's sends are held to the configured rate
// and burst on their own, with configuredSlack.
func TestConfiguredBroken(t *testing.T) {
	d := draw(quotatest.GCRA, 10, time.Second, 2, 10, func(d *Draw) { d.Configured, d.Clients = ConfiguredHalf, 2 }) // 5/s burst 1
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, FamilyStart.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	ok, early := at(0, 200, 400), at(0, 200, 399)
	if n, _ := d.configuredBroken([][]time.Time{ok, ok}); n != 0 {
		t.Errorf("two clients at 5/s: %d broke it", n)
	}
	if n, _ := d.configuredBroken([][]time.Time{ok, at(100, 300)}); n != 0 {
		t.Errorf("two clients at 5/s, 100 ms apart together: %d broke it", n)
	}
	if n, msg := d.configuredBroken([][]time.Time{ok, early}); n != 1 || !strings.Contains(msg, "at most 1 allowed") {
		t.Errorf("one client 1 ms early: %d broke it (%q), want 1", n, msg)
	}
	if n, _ := d.configuredBroken([][]time.Time{{FamilyStart, FamilyStart.Add(200*time.Millisecond - configuredSlack)}}); n != 0 {
		t.Errorf("within the slack: %d broke it", n)
	}
	d.Configured = ConfiguredNone
	if n, _ := d.configuredBroken([][]time.Time{early}); n != 0 {
		t.Errorf("no rate configured: %d broke it", n)
	}
}

// TestRenderFamily: the table has a row pair per class, the worst draws
// carry their replay commands.
func TestRenderFamily(t *testing.T) {
	var rs []DrawResult
	for k := range 4 {
		rs = append(rs, result(k, ConfiguredExact, 1, Outcome{Refused: 10 * k, Makespan: 11 * time.Second}, Outcome{Refused: 5, Makespan: 10 * time.Second}))
	}
	rs = append(rs, result(4, ConfiguredNone, 3, Outcome{Deadline: 7, Makespan: 5 * time.Second}, Outcome{Makespan: 10 * time.Second}))
	out := RenderFamily(99, rs)
	for _, want := range []string{
		"| exact | 1 | 4 | headgate | 1.0 · 3.0 · 3.0 | 1.10 · 1.10 · 1.10 | 0 (0) | 0 | 0 | 3 |",
		"| exact | 1 | 4 | baseline | 0.5 · 0.5 · 0.5 | 1.00 · 1.00 · 1.00 | 0 (0) | 0 | 0 |  |",
		"| none | 2–4 | 1 | headgate | 0.0 · 0.0 · 0.0 | 0.50 · 0.50 · 0.50 | 1 (7) | 0 | – | 0 |",
		"| GCRA | 3.0 · 1.10 (4) | – |",
		ReplayCommand(99, 3),
		ReplayCommand(99, 4),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// TestRunFamilyDraw runs a small draw through both clients, in virtual
// time: on a GCRA server, configured exactly, over no wire, both reach the
// ideal with no 429; shared by three clients configured exactly, the
// figures are the key's (more than a third of the calls' 429s) and every
// call ends.
func TestRunFamilyDraw(t *testing.T) {
	for _, tt := range []struct {
		name    string
		d       Draw
		refused bool
	}{
		{"one client", draw(quotatest.GCRA, 50, time.Second, 5, 80, func(d *Draw) { d.Configured = ConfiguredExact }), false},
		{"three clients", draw(quotatest.GCRA, 50, time.Second, 5, 80, func(d *Draw) { d.Configured, d.Clients = ConfiguredExact, 3 }), true},
		{"deadlines", draw(quotatest.GCRA, 50, time.Second, 5, 80, func(d *Draw) { d.Configured, d.Deadlines = ConfiguredExact, 2 }), false},
		{"over a wire", draw(quotatest.GCRA, 50, time.Second, 5, 80, func(d *Draw) { d.Configured, d.Latency = ConfiguredExact, 40*time.Millisecond }), false},
	} {
		ideal, err := tt.d.ideal()
		if err != nil {
			t.Fatal(err)
		}
		for _, baseline := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/baseline=%v", tt.name, baseline), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var trace strings.Builder
					o, err := RunFamilyDraw(context.Background(), tt.d, baseline, ideal, &trace)
					if err != nil {
						t.Fatal(err)
					}
					if tt.d.Deadlines > 0 {
						// Run with no ideal, a deadline of 1 s: the
						// baseline's calls whose turn at 50/s is past it fail
						// for it (the one whose turn is the deadline itself
						// either way); headgate's fail for it too, none
						// otherwise (how many is the controller's: today's
						// holds them all for the reset the burst's last
						// answer states, 1 s).
						o, err := RunFamilyDraw(context.Background(), tt.d, baseline, 0, nil)
						if err != nil {
							t.Fatal(err)
						}
						late, most := tt.d.Calls-5-50, tt.d.Calls-5-50+1
						if !baseline {
							most = tt.d.Calls
						}
						if o.Deadline < late || o.Deadline > most || o.Failed != 0 {
							t.Errorf("deadline 1 s: %d failed for it, %d otherwise; want %d to %d, and 0", o.Deadline, o.Failed, late, most)
						}
					}
					if o.ConfiguredBroken != 0 || o.Sent != tt.d.Calls+o.Refused+o.Failed*(familyTries-1) && o.Failed == 0 {
						t.Errorf("%+v: want each 429 retried, the configured rate kept", o)
					}
					var lost []string
					if o.Failed+o.Deadline != 0 {
						lost = append(lost, fmt.Sprintf("%d calls failed, %d for a deadline; want every call ended", o.Failed, o.Deadline))
					}
					if baseline {
						for _, l := range lost {
							t.Error(l)
						}
					} else {
						judge(t, lost, fmt.Sprintf("%+v", o))
					}
					// The baseline paces at the configured rate, the server's:
					// the ideal to the nanosecond; headgate no sooner.
					if !tt.refused && (o.Refused != 0 || o.Makespan < ideal || baseline && o.Makespan != ideal) {
						t.Errorf("%d 429s, makespan %v; want none and the ideal %v", o.Refused, o.Makespan, ideal)
					}
					if tt.refused && o.Refused == 0 {
						t.Errorf("no 429 from three clients each configured at the key's limit; want the key's")
					}
					if got := strings.Count(trace.String(), "\n# sent_ms"); got != tt.d.Clients {
						t.Errorf("trace of %d clients, want %d", got, tt.d.Clients)
					}
				})
			})
		}
	}
}

// TestJitterFloor checks the floor on draws worked out by hand, and its
// proof against the server's limiter: sent on jitterSchedule, no pattern
// of delays within the jitter gets a request refused; any request sent a
// nanosecond sooner, the pattern of the proof does.
func TestJitterFloor(t *testing.T) {
	const ms = time.Millisecond
	// Burst 1, 100/s (I = 10 ms), J = 25 ms: one request per 35 ms; 12
	// calls: 11 × 35 ms, and legs of 2 × 0 + 25 ms on average.
	d := draw(quotatest.GCRA, 100, time.Second, 1, 12, func(d *Draw) { d.Jitter = 25 * ms })
	if got, want := d.jitterFloor(), 11*35*ms+25*ms; got != want {
		t.Errorf("burst 1: floor %v, want %v", got, want)
	}
	// Burst 2: two requests per 35 ms: the 12th (index 11) at 5 × 35 + 10 + 25 ms.
	d = draw(quotatest.GCRA, 100, time.Second, 2, 12, func(d *Draw) { d.Jitter = 25 * ms })
	if got, want := d.jitterFloor(), 5*35*ms+10*ms+25*ms; got != want {
		t.Errorf("burst 2: floor %v, want %v", got, want)
	}
	// The jitter within the tolerance: the floor is the ideal, at most.
	d = draw(quotatest.GCRA, 100, time.Second, 4, 60, func(d *Draw) { d.Jitter, d.Latency = 25*ms, 40*ms })
	if ideal, _ := d.ideal(); d.jitterFloor() > ideal {
		t.Errorf("tolerance 30ms over jitter 25ms: floor %v over the ideal %v", d.jitterFloor(), ideal)
	}

	const n, burst, interval, jitter = 40, 3, 10 * ms, 25 * ms
	refused := func(s, delay []time.Duration) int {
		lim, err := quotatest.NewLimiter(quotatest.Config{Requests: 100, Period: time.Second, Burst: burst})
		if err != nil {
			t.Fatal(err)
		}
		arrive := make([]time.Duration, len(s))
		for k := range s {
			arrive[k] = s[k] + delay[k]
		}
		slices.Sort(arrive)
		no := 0
		for _, a := range arrive {
			if ok, _ := lim.Take(FamilyStart.Add(a)); !ok {
				no++
			}
		}
		return no
	}
	s := jitterSchedule(n, burst, interval, jitter)
	patterns := map[string]func(k int) time.Duration{
		"none":        func(int) time.Duration { return 0 },
		"all":         func(int) time.Duration { return jitter },
		"alternating": func(k int) time.Duration { return time.Duration(k%2) * jitter },
		"hashed":      func(k int) time.Duration { return time.Duration(splitmix(uint64(k)) % uint64(jitter+1)) },
	}
	for name, p := range patterns {
		delay := make([]time.Duration, n)
		for k := range delay {
			delay[k] = p(k)
		}
		if no := refused(s, delay); no != 0 {
			t.Errorf("sent on the schedule, delays %s: %d refused", name, no)
		}
	}
	// Each request k sent a nanosecond sooner: the window that set its time
	// (j = k − m), j held back, those between landed after it, k at once.
	for k := burst; k < n; k++ {
		early := slices.Clone(s)
		early[k]--
		for m := burst; m <= k; m++ {
			j := k - m
			if s[k] != s[j]+time.Duration(m-burst+1)*interval+jitter {
				continue
			}
			delay := make([]time.Duration, n)
			for i := j; i < k; i++ {
				delay[i] = max(0, early[j]+jitter-early[i])
			}
			if no := refused(early, delay); no == 0 {
				t.Errorf("request %d a nanosecond sooner, request %d held back: none refused", k, j)
			}
			break
		}
	}
}
