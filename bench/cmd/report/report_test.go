package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headgate-go/headgate/bench/matrix"
)

const sample = `# headgate benchmarks
machine-nproc: 2
machine-cpu: Test CPU
go-version: go version go1.26.8 linux/amd64
date: 2026-01-02T03:04:05Z
goos: linux
pkg: github.com/headgate-go/headgate/bench
BenchmarkAdmit/headgate-2         	 1000	        60.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmit/xrate-wait-2       	 1000	       120.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmitParallel/headgate-2 	 1000	        80.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmit/headgate-2         	 1000	        70.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmit/xrate-wait-2       	 1000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmit/headgate-2         	 1000	        90.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmit/xrate-wait-2       	 1000	       140.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmitParallel/uber-take-2 	 1000	        90.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmitParallel4x/headgate-2 	 1000	        70.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdmitParallel4x/uber-take-2 	 1000	        60.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkWaiters/park/headgate-2 	 1	 900000000 ns/op	 480.0 B/waiter	 1000 ns/cancel
BenchmarkWaiters/park/xrate-2 	 1	 900000000 ns/op	 490.0 B/waiter	 900.0 ns/cancel
BenchmarkWaiters/drain/headgate-2 	 1	 300000000 ns/op	 200.0 ms/drain
BenchmarkWaiters/drain/xrate-2 	 1	 300000000 ns/op	 150.0 ms/drain
BenchmarkRedis/serial/headgate-2 	 1000	 40000 ns/op	 25000 admissions/s
BenchmarkRedis/8-goroutines/headgate-2 	 1000	 20000 ns/op	 50000 admissions/s
BenchmarkRedis/serial/redis_rate-2 	 1000	 30000 ns/op	 33333 admissions/s
BenchmarkRedis/8-goroutines/redis_rate-2 	 1000	 20000 ns/op	 45000 admissions/s
BenchmarkTransport/net-http/bare-2     	 100	     50000 ns/op	    5800 B/op	      67 allocs/op
BenchmarkTransport/net-http/headgate-2 	 100	     51000 ns/op	    5800 B/op	      67 allocs/op
BenchmarkParseFeedback/plain-200-2     	 100	     300 ns/op	       0 B/op	       0 allocs/op
BenchmarkScenario/pause/headgate-2     	 1	 2000000000 ns/op	 1.000 429s/op	 0 failed/op	 1.130 makespan/ideal	 201.0 sent/op	 1.000 inpause/op	 100 B/op	 10 allocs/op
PASS
ok  	github.com/headgate-go/headgate/bench	10.0s
`

func TestParseMedians(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, unit string
		want       float64
		runs       int
	}{
		{"BenchmarkAdmit/headgate", "ns/op", 70, 3},
		{"BenchmarkAdmit/xrate-wait", "ns/op", 120, 3},
		{"BenchmarkScenario/pause/headgate", "makespan/ideal", 1.13, 1},
		{"BenchmarkScenario/pause/headgate", "inpause/op", 1, 1},
	} {
		got, ok := r.median(c.name, c.unit)
		if !ok || got != c.want || r.runs(c.name, c.unit) != c.runs {
			t.Errorf("median(%s, %s) = %v, %v over %d runs; want %v over %d", c.name, c.unit, got, ok, r.runs(c.name, c.unit), c.want, c.runs)
		}
	}
	if r.procs != "2" || r.config["machine-cpu"] != "Test CPU" || r.config["date"] != "2026-01-02T03:04:05Z" {
		t.Errorf("procs %q, config %v", r.procs, r.config)
	}
}

func TestRenderRatios(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	md := render(r, "raw")
	t.Log("\n" + md)
	wantAll(t, "tables", md,
		"Test CPU (2 CPUs), go version go1.26.8 linux/amd64, 2026-01-02T03:04:05Z", "median of 3 interleaved rounds",
		"| **headgate** | `Budget.Acquire` + `Permit.Release` | 70 ns | 1.00× | 80 ns | 1.00× | 70 ns | 1.00× | 0 |",
		"| golang.org/x/time/rate | `Limiter.Wait` | 120 ns | 1.71× | – | – | – | – | 0 |",
		"**0.58× x/time/rate `Wait`** in the same run (goal: 0 allocs/op and at most 0.5×: **not met**)",
		"it takes **0.89×** the fastest peer's time at 2 goroutines and **1.17×** at 8 (goal: at most 1× at both: **not met**)",
		"| **headgate** `Acquire` | 480 B | 1000 ns | 200 ms |",
		"**480 B** per parked caller (goal: at most 512 B: met), cancel **1.11×** x/time/rate's (goal: at most 1.25×: met)",
		"drain **1.33×** x/time/rate's (goal: at most 1.25×: **not met**)",
		"| go-redis/redis_rate `Allow` | 33,333/s | 45,000/s |",
		"**25,000 admissions/s** serially (goal: at least 20,000/s: met)",
		"| net/http over loopback | 50.0 µs | 51.0 µs | 1.02× | +1000 ns | 0% | 67 → 67 |",
		"| 200, ordinary headers, no rate-limit fields | 300 ns | 0 |",
		"| pause | **headgate** transport | 1 | 0 | 1.13 | 1 |",
	)
}

// TestRenderRedisVsPing: serial Redis rows timed beside PINGs get their
// ratio column, and the summary quotes headgate's.
func TestRenderRedisVsPing(t *testing.T) {
	withPing := strings.NewReplacer(
		"25000 admissions/s\n", "25000 admissions/s\t 1.800 vs-ping\n",
		"33333 admissions/s\n", "33333 admissions/s\t 1.350 vs-ping\n",
	).Replace(sample) +
		"BenchmarkRedis/serial/ping-2 \t 1000\t 20000 ns/op\t 45000 admissions/s\t 0.990 vs-ping\n" +
		"BenchmarkRedis/8-goroutines/ping-2 \t 1000\t 10000 ns/op\t 70000 admissions/s\n"
	r, err := parse(strings.NewReader(withPing))
	if err != nil {
		t.Fatal(err)
	}
	md := render(r, "raw")
	wantAll(t, "tables", md,
		"| library | serial | serial ÷ PING | 8 goroutines |",
		"| **headgate** `redisstore` | 25,000/s | 1.80× | 50,000/s |",
		"| go-redis/redis_rate `Allow` | 33,333/s | 1.35× | 45,000/s |",
		"| a bare `PING` (go-redis): the round trip alone | 45,000/s | 0.99× | 70,000/s |",
		"a bare PING makes 45,000 round trips/s serially in the same run: one admission takes 1.80× a bare round trip timed beside it.",
	)
}

// TestRenderRedisInterleaved: the rows of a BenchmarkRedis whose rows take
// turns (one benchmark per mode, a unit per row) fill the same table, and
// the summary quotes redis_rate and the PING of the same moments.
func TestRenderRedisInterleaved(t *testing.T) {
	var b strings.Builder
	for _, line := range strings.SplitAfter(sample, "\n") {
		if !strings.HasPrefix(line, "BenchmarkRedis/") {
			b.WriteString(line)
		}
	}
	for _, v := range []struct{ hg, rr, ping, hgVs, rrVs float64 }{{21000, 19000, 36000, 1.71, 1.89}, {25000, 22000, 40000, 1.60, 1.82}, {19000, 17000, 30000, 1.58, 1.76}} {
		fmt.Fprintf(&b, "BenchmarkRedis/serial-2 \t 1000\t 50000 ns/op\t %.0f headgate-admissions/s\t %.0f headgate-plain-client-admissions/s\t 2.9 headgate-plain-client-vs-ping\t %.2f headgate-vs-ping\t %.0f ping-admissions/s\t %.0f redis_rate-admissions/s\t %.2f redis_rate-vs-ping\n",
			v.hg, v.hg/2, v.hgVs, v.ping, v.rr, v.rrVs)
		fmt.Fprintf(&b, "BenchmarkRedis/8-goroutines-2 \t 60\t 20000000 ns/op\t %.0f headgate-admissions/s\t 26000 headgate-plain-client-admissions/s\t %.0f ping-admissions/s\t %.0f redis_rate-admissions/s\n",
			v.hg*1.2, v.ping*1.3, v.rr*1.2)
	}
	r, err := parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	md := render(r, "raw")
	wantAll(t, "tables", md,
		"The rows take turns within one benchmark, in chunks",
		"each row once per round, in an order drawn afresh each round",
		"| library | serial | serial ÷ PING | 8 goroutines |",
		"| **headgate** `redisstore` | 21,000/s | 1.60× | 25,200/s |",
		"| **headgate** `redisstore`, client without `ContextTimeoutEnabled` | 10,500/s | 2.90× | 26,000/s |",
		"| go-redis/redis_rate `Allow` | 19,000/s | 1.82× | 22,800/s |",
		"| a bare `PING` (go-redis): the round trip alone | 36,000/s | 1.00× | 46,800/s |",
		"**21,000 admissions/s** serially (goal: at least 20,000/s: met); in the same moments a bare PING made 36,000 round trips/s and redis_rate 19,000 admissions/s: one admission takes 1.60× a bare round trip.",
	)
	if strings.Contains(md, "A serial row alternates with bare PINGs") {
		t.Error("the interleaved run is described as the alternating one")
	}
}

func TestRenderGoalNotMet(t *testing.T) {
	slow := strings.ReplaceAll(sample, "        90.0 ns/op", "       190.0 ns/op")
	slow = strings.ReplaceAll(slow, "        70.0 ns/op", "       170.0 ns/op")
	r, err := parse(strings.NewReader(slow))
	if err != nil {
		t.Fatal(err)
	}
	if md := render(r, "raw"); !strings.Contains(md, "at most 0.5×: **not met**") {
		t.Errorf("a headgate slower than 0.5× Wait must be reported as not met:\n%s", md)
	}
}

func TestParseRejectsEmpty(t *testing.T) {
	if _, err := parse(strings.NewReader("PASS\nok x 1s\n")); err == nil {
		t.Error("parse of output without results = nil error")
	}
}

func TestReplaceSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	os.WriteFile(path, []byte("# x\n\nthe table between `<!-- bench:begin -->` and `<!-- bench:end -->` is generated\n"+
		"<!-- bench:begin -->\nold table\n<!-- bench:end -->\ntail\n"), 0o644)
	if err := replaceSection(path, "new table\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# x\n\nthe table between `<!-- bench:begin -->` and `<!-- bench:end -->` is generated\n" +
		"<!-- bench:begin -->\nnew table\n<!-- bench:end -->\ntail\n"
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	os.WriteFile(path, []byte("no markers"), 0o644)
	if err := replaceSection(path, "x"); err == nil {
		t.Error("replaceSection without markers = nil error")
	}
}

func TestFromFileWritesTables(t *testing.T) {
	dir := t.TempDir()
	in, md := filepath.Join(dir, "latest.txt"), filepath.Join(dir, "latest.md")
	os.WriteFile(in, []byte(sample), 0o644)
	var out strings.Builder
	if err := mainErr([]string{"-from", in, "-md", md}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(got), "#### Admit path") {
		t.Errorf("%s: %v\n%s", md, err, got)
	}
}

// TestSummary: the summary quotes headgate beside its peer of the same run,
// names each peer once where it changes, and sums up the matrix's cells by
// scenario: the worst 429s and the median makespan, what strayed from the
// configured rate, what went into the pause, and every failed call.
func TestSummary(t *testing.T) {
	r, err := parse(strings.NewReader(sample + "BenchmarkScenario/pause/xrate-2 \t 1\t 2000000000 ns/op\t 60.0 429s/op\t 60 failed/op\t 0.400 makespan/ideal\t 200 sent/op\t 59.0 inpause/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	const base = "x/time/rate + Retry-After (baseline)"
	cell := func(server, scenario, client string, refused int, ratio float64) matrix.Result {
		return matrix.Result{Server: server, Scenario: scenario, Client: client, Calls: 500, Refused: refused,
			Ideal: time.Second, Makespan: time.Duration(ratio * float64(time.Second))}
	}
	m := matrixRun{Date: "2026-01-02T04:05:06Z", Command: "cd bench && go run ./cmd/matrix -doc ../docs/BENCHMARKS.md"}
	m.Results = []matrix.Result{
		cell("a", "exact", "headgate transport", 1, 1.00),
		cell("a", "exact", "hgresty", 0, 1.02),
		cell("b", "exact", "hgkit", 2, 1.26),
		cell("a", "exact", base, 100, 1.20),
		cell("b", "exact", base, 10, 1.50),
		cell("c", "exact", "hgretry", 0, 9),
		{Server: "c", Scenario: "exact", Client: "hgresty", Skipped: "no redis-server"},
		{Server: "a", Scenario: "half", Client: "headgate transport", ConfiguredSlack: 3 * time.Millisecond},
		{Server: "a", Scenario: "half", Client: base, ConfiguredSlack: 11 * time.Second},
		{Server: "a", Scenario: "pause", Client: "hgkit", IntoKnown: 1, RetrySeen: true, RetryDelay: 12 * time.Millisecond},
		{Server: "b", Scenario: "pause", Client: "hgkit", RetrySeen: true, RetryDelay: -3 * time.Millisecond},
		{Server: "a", Scenario: "pause", Client: base, IntoKnown: 99, Failed: 7},
	}
	m.Results[3].Failed = 5
	s := summary(r, m, "[`docs/BENCHMARKS.md`](docs/BENCHMARKS.md)")
	t.Log("\n" + s)
	wantAll(t, "summary", s,
		"| a call that need not wait, 1 · 2 goroutines | 70 ns · 80 ns, 0 allocs | x/time/rate `Wait`: 120 ns · – |",
		"| 100,000 callers parked: heap · cancel, per caller | 480 B · 1000 ns | 490 B · 900 ns |",
		"| a fleet's budget in Redis: admissions/s, serial | 25,000/s | go-redis/redis_rate `Allow`: 33,333/s |",
		"| … the server pauses 1 s: requests sent into the pause | 1 | x/time/rate `Wait`: 59 |",
		"| feedback matrix, 3 servers, configured at the exact limit: 429s, worst cell · time ÷ ideal, median | 0.4 % · 1.14× | x/time/rate + Retry-After: 20.0 % · 1.35× · **5 failed** |",
		"| … configured at half: sends kept to the configured rate, worst cell | within ±3.0 ms | broken in 1 of 1 cells |",
		"| … the server pauses 2 s: requests into the known pause, all cells · retry after its end, latest | 1 · +12 ms | 99 · no retry · **7 failed** |",
		"the matrix of 2026-01-02 04:05 UTC (`cd bench && go run ./cmd/matrix -doc ../docs/BENCHMARKS.md`)",
		"Every table, and how to read it: [`docs/BENCHMARKS.md`](docs/BENCHMARKS.md).",
	)
	if strings.Contains(s, "learned") || strings.Contains(s, "twice the limit") || strings.Contains(s, "200 calls, configured at the server's rate") {
		t.Error("the summary has rows for what did not run")
	}
}

// TestSummaryFromFiles: -summary writes the README's section from the
// benchmarks' results and the matrix's, and links the doc -doc names.
func TestSummaryFromFiles(t *testing.T) {
	dir := t.TempDir()
	in, mj := filepath.Join(dir, "latest.txt"), filepath.Join(dir, "matrix.json")
	readme, doc := filepath.Join(dir, "README.md"), filepath.Join(dir, "docs", "BENCHMARKS.md")
	os.WriteFile(in, []byte(sample), 0o644)
	os.WriteFile(mj, []byte(`{"date": "2026-01-02T04:05:06Z", "command": "cmd", "results": [`+
		`{"Server": "a", "Scenario": "exact", "Client": "hgkit", "Calls": 500, "Refused": 2, "Makespan": 1000000000, "Ideal": 1000000000}]}`), 0o644)
	os.WriteFile(readme, []byte("# x\n<!-- summary:begin -->\nold\n<!-- summary:end -->\ntail\n"), 0o644)
	os.MkdirAll(filepath.Dir(doc), 0o755)
	os.WriteFile(doc, []byte("# b\n<!-- bench:begin -->\nold\n<!-- bench:end -->\n"), 0o644)
	var out strings.Builder
	if err := mainErr([]string{"-from", in, "-md", "", "-doc", doc, "-matrix", mj, "-summary", readme}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	wantAll(t, "README", string(got), "| 0.4 % · 1.00× | – |", "[`BENCHMARKS.md`](docs/BENCHMARKS.md)", "<!-- summary:end -->\ntail\n")
	if strings.Contains(string(got), "\nold\n") {
		t.Errorf("the old section is still there:\n%s", got)
	}
	b, _ := os.ReadFile(doc)
	if !strings.Contains(string(b), "#### Admit path") || !strings.Contains(string(b), "(../latest.txt)") {
		t.Errorf("the doc's tables, linking the raw results from docs/:\n%s", b)
	}
}

// wantAll reports each of wants that s, the text called what, lacks.
func wantAll(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %q", what, want)
		}
	}
}
