package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results are the parsed benchmark lines of a results file.
type results struct {
	config map[string]string               // the last value of each "key: value" line
	values map[string]map[string][]float64 // benchmark (without -GOMAXPROCS) → unit → one value per run
	procs  string                          // the GOMAXPROCS suffix of the parallel runs, "" when absent
}

var (
	configLine = regexp.MustCompile(`^([a-z][^\sA-Z:]*):\s*(.*)$`)
	procSuffix = regexp.MustCompile(`-(\d+)$`)
)

// parse reads Go benchmark output (the format benchstat reads): config
// lines and result lines; anything else is skipped.
func parse(r io.Reader) (*results, error) {
	res := &results{config: map[string]string{}, values: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if m := configLine.FindStringSubmatch(line); m != nil {
			res.config[m[1]] = m[2]
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if m := procSuffix.FindStringSubmatch(name); m != nil {
			name = strings.TrimSuffix(name, m[0])
			res.procs = m[1]
		}
		units := res.values[name]
		if units == nil {
			units = map[string][]float64{}
			res.values[name] = units
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			units[f[i+1]] = append(units[f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(res.values) == 0 {
		return nil, fmt.Errorf("no benchmark results")
	}
	return res, nil
}

// median returns the median of a benchmark's values in unit.
func (r *results) median(name, unit string) (float64, bool) {
	vs := slices.Clone(r.values[name][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// spread returns half the range of a benchmark's values in unit, as a
// fraction of their median: how far apart the rounds were.
func (r *results) spread(name, unit string) float64 {
	vs := r.values[name][unit]
	m, ok := r.median(name, unit)
	if !ok || m == 0 {
		return 0
	}
	return (slices.Max(vs) - slices.Min(vs)) / 2 / m
}

// redis returns a figure of BenchmarkRedis's row (headgate, ping, …) in
// mode (serial or 8-goroutines): the median of unit, from the benchmark
// where the rows take turns (its units are "<row>-<unit>"), or from a
// results file from before it, where each row was a benchmark of its own.
func (r *results) redis(mode, row, unit string) (float64, bool) {
	if v, ok := r.median("BenchmarkRedis/"+mode, row+"-"+unit); ok {
		return v, true
	}
	return r.median("BenchmarkRedis/"+mode+"/"+row, unit)
}

// runs returns how many values a benchmark has in unit.
func (r *results) runs(name, unit string) int { return len(r.values[name][unit]) }

// The rows of the tables: benchmark name suffix → label.
var admitRows = []struct{ key, lib, call string }{
	{"headgate", "**headgate**", "`Budget.Acquire` + `Permit.Release`"},
	{"headgate-capped", "**headgate**, `WithMaxInFlight`", "`Budget.Acquire` + `Permit.Release`"},
	{"xrate-wait", "golang.org/x/time/rate", "`Limiter.Wait`"},
	{"xrate-allow", "golang.org/x/time/rate", "`Limiter.Allow`"},
	{"xrate-wait-inf", "golang.org/x/time/rate at `rate.Inf`", "`Limiter.Wait`"},
	{"uber-take", "go.uber.org/ratelimit", "`Limiter.Take`"},
	{"failsafe-smooth-try", "failsafe-go smooth", "`TryAcquirePermit`"},
	{"failsafe-smooth-acquire", "failsafe-go smooth", "`AcquirePermit(ctx)`"},
	{"failsafe-bursty-try", "failsafe-go bursty", "`TryAcquirePermit`"},
	{"failsafe-bursty-acquire", "failsafe-go bursty", "`AcquirePermit(ctx)`"},
}

var transportRows = []struct{ key, label string }{
	{"net-http", "net/http over loopback"},
	{"resty", "resty v2 over loopback"},
	{"retryablehttp", "go-retryablehttp over loopback"},
	{"gokit", "go-kit over loopback"},
	{"stub", "net/http, in-process stub transport"},
}

var feedbackRows = []struct{ key, label string }{
	{"plain-200", "200, ordinary headers, no rate-limit fields"},
	{"github-200", "200 with GitHub's `X-RateLimit-*`"},
	{"ietf-200", "200 with IETF `RateLimit` + `RateLimit-Policy` (two policies)"},
	{"openai-200", "200 with OpenAI's `x-ratelimit-*-requests/-tokens`"},
	{"retry-after-429", "429 with `Retry-After: 30`"},
	{"retry-after-date-503", "503 with `Retry-After` as an HTTP-date"},
	{"github-403", "403 with `Retry-After` and `X-RateLimit-Remaining: 0`"},
}

var scenarioRows = []struct{ key, label string }{
	{"none", "no limiter"},
	{"xrate", "x/time/rate `Wait`"},
	{"uber", "uber `Take`"},
	{"failsafe", "failsafe-go smooth `AcquirePermit`"},
	{"headgate", "**headgate** transport"},
}

// ns formats nanoseconds: a decimal under 10 ns, whole nanoseconds up to
// 10 µs, microseconds above.
func ns(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.1f ns", v)
	case v < 10_000:
		return fmt.Sprintf("%.0f ns", v)
	}
	return fmt.Sprintf("%.1f µs", v/1000)
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// render writes the markdown tables from the medians; raw is the link to
// the raw results they came from.
func render(r *results, raw string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	procs := r.procs
	if procs == "" {
		procs = "1"
	}
	p("Measured in one run on %s (%s CPUs), %s, %s. Each figure is the median of %d interleaved rounds;\n",
		orUnknown(r.config["machine-cpu"]), orUnknown(r.config["machine-nproc"]), orUnknown(r.config["go-version"]),
		orUnknown(r.config["date"]), rounds(r))
	p("the raw results are in %s (benchstat reads them as they are).\n\n", raw)

	// Admit path.
	p("#### Admit path: one call let through, no wait\n\n")
	p("Every limiter is set to an effectively unlimited rate (10⁹ per second), so that none ever sleeps: the\n")
	p("figures are the bookkeeping alone, reading the clock included. \"vs headgate\" is the row's time ÷ headgate's.\n\n")
	p4 := "4"
	if n, err := strconv.Atoi(procs); err == nil {
		p4 = strconv.Itoa(4 * n)
	}
	p("| library | call | 1 goroutine | vs headgate | %s goroutines | vs headgate | %s goroutines | vs headgate | allocs/op |\n", procs, p4)
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	hs, _ := r.median("BenchmarkAdmit/headgate", "ns/op")
	hp, _ := r.median("BenchmarkAdmitParallel/headgate", "ns/op")
	h4, _ := r.median("BenchmarkAdmitParallel4x/headgate", "ns/op")
	fastest := map[string]float64{} // benchmark → the fastest peer's time
	for _, row := range admitRows {
		s, ok1 := r.median("BenchmarkAdmit/"+row.key, "ns/op")
		par, ok2 := r.median("BenchmarkAdmitParallel/"+row.key, "ns/op")
		par4, ok3 := r.median("BenchmarkAdmitParallel4x/"+row.key, "ns/op")
		if !ok1 && !ok2 && !ok3 {
			continue
		}
		if !strings.HasPrefix(row.key, "headgate") {
			for bench, v := range map[string]float64{"BenchmarkAdmitParallel": par, "BenchmarkAdmitParallel4x": par4} {
				if f, seen := fastest[bench]; v > 0 && (!seen || v < f) {
					fastest[bench] = v
				}
			}
		}
		allocs, _ := r.median("BenchmarkAdmit/"+row.key, "allocs/op")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.lib, row.call, cell(s, ok1, ns), ratio(s, hs, ok1), cell(par, ok2, ns), ratio(par, hp, ok2),
			cell(par4, ok3, ns), ratio(par4, h4, ok3), num(allocs))
	}
	if w, ok := r.median("BenchmarkAdmit/xrate-wait", "ns/op"); ok && hs > 0 {
		allocs, _ := r.median("BenchmarkAdmit/headgate", "allocs/op")
		p("\nheadgate's admit path: %s, %s allocs/op, **%.2f× x/time/rate `Wait`** in the same run (goal: 0 allocs/op and at most 0.5×: %s).\n",
			ns(hs), num(allocs), hs/w, goal(hs/w <= 0.5 && allocs == 0))
	}
	if f1, f4 := fastest["BenchmarkAdmitParallel"], fastest["BenchmarkAdmitParallel4x"]; hp > 0 && h4 > 0 && f1 > 0 && f4 > 0 {
		p("Contended, it takes **%.2f×** the fastest peer's time at %s goroutines and **%.2f×** at %s (goal: at most 1× at both: %s).\n",
			hp/f1, procs, h4/f4, p4, goal(hp <= f1 && h4 <= f4))
	}

	// Many waiters.
	if _, ok := r.median("BenchmarkWaiters/park/headgate", "B/waiter"); ok {
		p("\n#### Many waiters: 100,000 callers parked on one limiter\n\n")
		p("*Heap* is what the parked callers hold (after a GC, their goroutines made once beforehand and not counted);\n")
		p("*cancel* is the time from cancelling their shared context until the last has returned, per caller; *drain*\n")
		p("is the time until the last of 100,000 callers arriving at once at 10⁶/s, burst 1, has its turn (the pace\n")
		p("alone needs 100 ms; the goroutines' start is in it for both). Source: `bench/waiters_test.go`.\n\n")
		p("| library | heap per waiter | cancel, per waiter | drain |\n|---|--:|--:|--:|\n")
		for _, row := range []struct{ key, label string }{{"headgate", "**headgate** `Acquire`"}, {"xrate", "x/time/rate `Wait`"}} {
			heap, _ := r.median("BenchmarkWaiters/park/"+row.key, "B/waiter")
			cancel, _ := r.median("BenchmarkWaiters/park/"+row.key, "ns/cancel")
			drain, _ := r.median("BenchmarkWaiters/drain/"+row.key, "ms/drain")
			p("| %s | %.0f B | %s | %.0f ms |\n", row.label, heap, ns(cancel), drain)
		}
		hh, _ := r.median("BenchmarkWaiters/park/headgate", "B/waiter")
		hc, _ := r.median("BenchmarkWaiters/park/headgate", "ns/cancel")
		xc, _ := r.median("BenchmarkWaiters/park/xrate", "ns/cancel")
		hd, _ := r.median("BenchmarkWaiters/drain/headgate", "ms/drain")
		xd, _ := r.median("BenchmarkWaiters/drain/xrate", "ms/drain")
		if xc > 0 && xd > 0 {
			p("\nheadgate: **%.0f B** per parked caller (goal: at most 512 B: %s), cancel **%.2f×** x/time/rate's (goal: at most 1.25×: %s),\n",
				hh, goal(hh <= 512), hc/xc, goal(hc/xc <= 1.25))
			p("drain **%.2f×** x/time/rate's (goal: at most 1.25×: %s).\n", hd/xd, goal(hd/xd <= 1.25))
		}
	}

	// Redis.
	if _, ok := r.redis("serial", "headgate", "admissions/s"); ok {
		p("\n#### A fleet's budget in Redis: admissions per second on loopback\n\n")
		p("A redis-server started by the benchmark on the same machine (the same CPUs as the clients); one round trip per\n")
		p("admission for both: headgate's `redisstore` (a budget `WithStore`, `Acquire` + `Release`, one `EVALSHA`) and\n")
		p("go-redis/redis_rate's `Allow`, on a client built with `ContextTimeoutEnabled` as redisstore recommends (without it,\n")
		p("the store makes each call on a goroutine of its own, to bound its wait). Source: `bench/redis_test.go`.\n\n")
		_, interleaved := r.median("BenchmarkRedis/serial", "headgate-admissions/s")
		_, vsPing := r.redis("serial", "headgate", "vs-ping")
		switch {
		case interleaved:
			p("The rows take turns within one benchmark, in chunks — 32 calls of a row serially, 8 goroutines × 64 calls in\n")
			p("parallel — each row once per round, in an order drawn afresh each round, and each chunk is timed to its row, so\n")
			p("every row is measured in the same moments as the others: a serial round trip on a VM costs what waking its idle\n")
			p("CPUs costs, which swings 2–3× with the machine's load, so rows run one after the other would compare moments, not\n")
			p("code. \"serial ÷ PING\" is a row's time per admission over a bare PING's in those moments. Both limiters run at\n")
			p("10⁶ per second, where redis_rate's script writes each admission as headgate's does (at 10⁹ its float clock loses\n")
			p("the admission and the script only reads).\n\n")
		case vsPing:
			p("A serial row alternates with bare PINGs, timed apart: \"serial ÷ PING\" is its time per admission over a PING's\n")
			p("in the same moments, the figure to compare (a serial round trip on a VM costs what waking its idle CPUs costs, so\n")
			p("admissions/s follow how busy the machine is). Both limiters run at 10⁶ per second, where redis_rate's script\n")
			p("writes each admission as headgate's does (at 10⁹ its float clock loses the admission and the script only reads).\n\n")
		}
		if vsPing {
			p("| library | serial | serial ÷ PING | 8 goroutines |\n|---|--:|--:|--:|\n")
		} else {
			p("| library | serial | 8 goroutines |\n|---|--:|--:|\n")
		}
		for _, row := range []struct{ key, label string }{
			{"headgate", "**headgate** `redisstore`"},
			{"headgate-plain-client", "**headgate** `redisstore`, client without `ContextTimeoutEnabled`"},
			{"redis_rate", "go-redis/redis_rate `Allow`"},
			{"ping", "a bare `PING` (go-redis): the round trip alone"},
		} {
			s, ok := r.redis("serial", row.key, "admissions/s")
			if !ok {
				continue // a results file from before the row
			}
			par, _ := r.redis("8-goroutines", row.key, "admissions/s")
			switch vs, ok := r.redis("serial", row.key, "vs-ping"); {
			case vsPing && !ok && row.key == "ping": // the PING row itself, timed beside nothing else
				p("| %s | %s/s | 1.00× | %s/s |\n", row.label, thousands(s), thousands(par))
			case vsPing:
				p("| %s | %s/s | %.2f× | %s/s |\n", row.label, thousands(s), vs, thousands(par))
			default:
				p("| %s | %s/s | %s/s |\n", row.label, thousands(s), thousands(par))
			}
		}
		hs, _ := r.redis("serial", "headgate", "admissions/s")
		p("\nheadgate's store: **%s admissions/s** serially (goal: at least 20,000/s: %s)", thousands(hs), goal(hs >= 20000))
		if ping, ok := r.redis("serial", "ping", "admissions/s"); ok {
			vs, _ := r.redis("serial", "headgate", "vs-ping")
			switch {
			case interleaved:
				p("; in the same moments a bare PING made %s round trips/s", thousands(ping))
				if rr, ok := r.redis("serial", "redis_rate", "admissions/s"); ok {
					p(" and redis_rate %s admissions/s", thousands(rr))
				}
				p(": one admission takes %.2f× a bare round trip", vs)
			case vsPing:
				p("; a bare PING makes %s round trips/s serially in the same run: one admission takes %.2f× a bare round trip timed beside it", thousands(ping), vs)
			default:
				p("; a bare PING makes %s round trips/s serially in the same run: one admission takes %.2f× a bare round trip", thousands(ping), ping/hs)
			}
		}
		p(".\n")
	}

	// Transport overhead.
	p("\n#### Transport: one request, bare and with headgate\n\n")
	p("A GET of a small JSON body with no rate-limit headers, through each client as it comes and with headgate wired\n")
	p("in as its adapter recommends (a budget no request waits for). Over loopback the ratio is what a request pays;\n")
	p("the in-process stub leaves only the transports' own cost. \"Rounds ±\" is how far the rounds of the two rows\n")
	p("strayed from their medians: a difference smaller than that is noise.\n\n")
	p("| client | bare | with headgate | ratio | added | rounds ± | allocs/op bare → headgate |\n")
	p("|---|--:|--:|--:|--:|--:|--:|\n")
	row := func(label, bareName, hgName string) {
		bare, ok1 := r.median(bareName, "ns/op")
		hg, ok2 := r.median(hgName, "ns/op")
		if !ok1 || !ok2 {
			return
		}
		ab, _ := r.median(bareName, "allocs/op")
		ah, _ := r.median(hgName, "allocs/op")
		sp := max(r.spread(bareName, "ns/op"), r.spread(hgName, "ns/op"))
		p("| %s | %s | %s | %.2f× | %s | %.0f%% | %s → %s |\n", label, ns(bare), ns(hg), hg/bare, signedNs(hg-bare), 100*sp, num(ab), num(ah))
	}
	for _, tr := range transportRows {
		base := "BenchmarkTransport/" + tr.key + "/"
		row(tr.label, base+"bare", base+"headgate")
		row(tr.label+", `WithMaxInFlight`", base+"bare", base+"headgate-capped")
	}
	row("net/http over loopback, "+procs+" goroutines", "BenchmarkTransportParallel/net-http/bare", "BenchmarkTransportParallel/net-http/headgate")

	// The header parser.
	p("\n#### `ratelimit.Parse` on typical responses\n\n")
	p("| response | time | allocs/op |\n|---|--:|--:|\n")
	for _, row := range feedbackRows {
		v, ok := r.median("BenchmarkParseFeedback/"+row.key, "ns/op")
		if !ok {
			continue
		}
		a, _ := r.median("BenchmarkParseFeedback/"+row.key, "allocs/op")
		p("| %s | %s | %s |\n", row.label, ns(v), num(a))
	}

	// Scenarios.
	p("\n#### End to end: the demo's scenarios as benchmarks\n\n")
	p("One op is a batch of 200 calls from 50 goroutines against a loopback `quotatest` server enforcing 400/s,\n")
	p("burst 40, with GitHub's headers (`X-RateLimit-*` with a Unix reset, `Retry-After` on a 429); each limiter in front\n")
	p("of a plain `net/http` client, with no retries. *default*: every client configured at the real rate (and the real\n")
	p("burst where a limiter has one: no headroom); *misconfigured*: configured at 800/s; *pause*: the server pauses 1 s\n")
	p("once a third of the batch has arrived (*sent in pause* counts the requests that arrived during it). The ideal is what the server's limit\n")
	p("allows: (n − burst) × interval, plus the pause. Source: `bench/scenario_test.go`.\n\n")
	p("| scenario | client | 429s per batch | failed calls | makespan ÷ ideal | sent in pause |\n")
	p("|---|---|--:|--:|--:|--:|\n")
	for _, sc := range []string{"default", "misconfigured", "pause"} {
		for _, row := range scenarioRows {
			name := "BenchmarkScenario/" + sc + "/" + row.key
			refused, ok := r.median(name, "429s/op")
			if !ok {
				continue
			}
			failed, _ := r.median(name, "failed/op")
			ratio, _ := r.median(name, "makespan/ideal")
			inPause := "–"
			if v, ok := r.median(name, "inpause/op"); ok {
				inPause = num(v)
			}
			p("| %s | %s | %s | %s | %.2f | %s |\n", sc, row.label, num(refused), num(failed), ratio, inPause)
		}
	}
	return b.String()
}

// goal words whether a goal was met.
func goal(met bool) string {
	if met {
		return "met"
	}
	return "**not met**"
}

// thousands formats a count with a comma every three digits.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func cell(v float64, ok bool, f func(float64) string) string {
	if !ok {
		return "–"
	}
	return f(v)
}

func ratio(v, base float64, ok bool) string {
	if !ok || base <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v/base)
}

func signedNs(v float64) string {
	if v < 0 {
		return "−" + ns(-v)
	}
	return "+" + ns(v)
}
