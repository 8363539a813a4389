package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/headgate-go/headgate/bench/matrix"
)

// matrixRun is the part of the feedback matrix's results file
// (results/matrix.json, written by cmd/matrix) the summary reads.
type matrixRun struct {
	Machine string          `json:"machine"`
	Go      string          `json:"go"`
	Date    string          `json:"date"`
	Command string          `json:"command"`
	Results []matrix.Result `json:"results"` // the loopback cells
}

func readMatrix(path string) (matrixRun, error) {
	var m matrixRun
	raw, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// brokenSlack is the slack at which a half cell's sends count as not kept
// to the configured rate: bench/matrix's bound on its search (maxSlack), shown
// as ✗ in the matrix's tables.
const brokenSlack = 10 * time.Second

// summary is the README's comparison table: a few rows of the benchmarks
// and of the feedback matrix, headgate beside the peer of the same run,
// with where each comes from and a link (docs) to every table.
func summary(r *results, m matrixRun, docs string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	lastPeer := ""
	// row writes one row; peer is named only where it changes.
	row := func(what, hg, peerName, peer string) {
		if peerName != "" && peerName != lastPeer {
			peer = peerName + ": " + peer
		}
		lastPeer = peerName
		p("| %s | %s | %s |\n", what, hg, peer)
	}

	p("| measured | headgate | peer, in the same run |\n|---|---|---|\n")
	procs := r.procs
	if procs == "" {
		procs = "1"
	}
	if hs, ok := r.median("BenchmarkAdmit/headgate", "ns/op"); ok {
		hp, okp := r.median("BenchmarkAdmitParallel/headgate", "ns/op")
		allocs, _ := r.median("BenchmarkAdmit/headgate", "allocs/op")
		xs, oks := r.median("BenchmarkAdmit/xrate-wait", "ns/op")
		xp, okxp := r.median("BenchmarkAdmitParallel/xrate-wait", "ns/op")
		row(fmt.Sprintf("a call that need not wait, 1 · %s goroutines", procs),
			fmt.Sprintf("%s · %s, %s allocs", ns(hs), cell(hp, okp, ns), num(allocs)),
			"x/time/rate `Wait`", fmt.Sprintf("%s · %s", cell(xs, oks, ns), cell(xp, okxp, ns)))
	}
	if hh, ok := r.median("BenchmarkWaiters/park/headgate", "B/waiter"); ok {
		hc, _ := r.median("BenchmarkWaiters/park/headgate", "ns/cancel")
		xh, _ := r.median("BenchmarkWaiters/park/xrate", "B/waiter")
		xc, _ := r.median("BenchmarkWaiters/park/xrate", "ns/cancel")
		row("100,000 callers parked: heap · cancel, per caller",
			fmt.Sprintf("%.0f B · %s", hh, ns(hc)), "x/time/rate `Wait`", fmt.Sprintf("%.0f B · %s", xh, ns(xc)))
	}
	if hs, ok := r.redis("serial", "headgate", "admissions/s"); ok {
		rr, _ := r.redis("serial", "redis_rate", "admissions/s")
		row("a fleet's budget in Redis: admissions/s, serial",
			thousands(hs)+"/s", "go-redis/redis_rate `Allow`", thousands(rr)+"/s")
	}
	for _, sc := range []struct{ key, what string }{
		{"default", "200 calls, configured at the server's rate: 429s · time ÷ ideal"},
		{"misconfigured", "… configured at twice its rate"},
	} {
		hr, ok := r.median("BenchmarkScenario/"+sc.key+"/headgate", "429s/op")
		if !ok {
			continue
		}
		hx, _ := r.median("BenchmarkScenario/"+sc.key+"/headgate", "makespan/ideal")
		xr, _ := r.median("BenchmarkScenario/"+sc.key+"/xrate", "429s/op")
		xx, _ := r.median("BenchmarkScenario/"+sc.key+"/xrate", "makespan/ideal")
		row(sc.what, fmt.Sprintf("%s · %.2f×", num(hr), hx), "x/time/rate `Wait`", fmt.Sprintf("%s · %.2f×", num(xr), xx))
	}
	if hp, ok := r.median("BenchmarkScenario/pause/headgate", "inpause/op"); ok {
		xp, ok := r.median("BenchmarkScenario/pause/xrate", "inpause/op")
		row("… the server pauses 1 s: requests sent into the pause", num(hp), "x/time/rate `Wait`", cell(xp, ok, num))
	}

	hg, base := splitMatrix(m.Results)
	servers := map[string]bool{}
	for _, c := range append(slices.Clone(hg), base...) {
		servers[c.Server] = true
	}
	baseName := "x/time/rate + Retry-After"
	for _, sc := range []struct{ key, what string }{
		{"exact", "feedback matrix, %d servers, configured at the exact limit: 429s, worst cell · time ÷ ideal, median"},
		{"2x", "… configured at twice the limit"},
		{"half", "… configured at half: sends kept to the configured rate, worst cell"},
		{"pause", "… the server pauses 2 s: requests into the known pause, all cells · retry after its end, latest"},
		{"learned", "… no rate configured (learned): 429s, worst cell · time ÷ ideal, median"},
	} {
		h, x := ofScenario(hg, sc.key), ofScenario(base, sc.key)
		if len(h) == 0 {
			continue
		}
		what := sc.what
		if strings.Contains(what, "%d") {
			what = fmt.Sprintf(what, len(servers))
		}
		peerName, peer := "", "–"
		if len(x) > 0 {
			peerName, peer = baseName, cellsFigure(x)
		}
		row(what, cellsFigure(h), peerName, peer)
	}
	p("\nIn the matrix headgate is its transport and three adapters, the peer each goroutine sleeping the Retry-After it got.\n")
	p("From `make bench` on %s (%s CPUs), %s: the benchmarks of\n",
		orUnknown(r.config["machine-cpu"]), orUnknown(r.config["machine-nproc"]), strings.TrimPrefix(orUnknown(r.config["go-version"]), "go version "))
	p("%s (median of %d rounds), the matrix of %s (`%s`). Every table, and how to read it: %s.\n",
		shortDate(r.config["date"]), rounds(r), shortDate(m.Date), strings.TrimSpace(m.Command), docs)
	return b.String()
}

// splitMatrix returns the cells that ran, headgate's clients' apart from
// the baseline's.
func splitMatrix(results []matrix.Result) (hg, base []matrix.Result) {
	for _, c := range results {
		if c.Skipped != "" {
			continue
		}
		if spec, ok := matrix.ClientByName(c.Client); ok && spec.Headgate {
			hg = append(hg, c)
		} else {
			base = append(base, c)
		}
	}
	return hg, base
}

func ofScenario(cells []matrix.Result, scenario string) []matrix.Result {
	var out []matrix.Result
	for _, c := range cells {
		if c.Scenario == scenario {
			out = append(out, c)
		}
	}
	return out
}

// cellsFigure sums up cells of one scenario: the worst 429s and the median
// makespan ÷ ideal; for half, how far the sends strayed from the
// configured rate; for the pause, what went into it and when the refused
// call came back. Calls that failed after every retry are added, in bold.
func cellsFigure(cells []matrix.Result) string {
	var s string
	failed := 0
	for _, c := range cells {
		failed += c.Failed
	}
	switch cells[0].Scenario {
	case "half":
		worst, broken := time.Duration(0), 0
		for _, c := range cells {
			if c.ConfiguredSlack >= brokenSlack {
				broken++
			}
			worst = max(worst, min(c.ConfiguredSlack, brokenSlack))
		}
		switch {
		case broken > 0:
			s = fmt.Sprintf("broken in %d of %d cells", broken, len(cells))
		case worst == 0:
			s = "exactly"
		default:
			s = fmt.Sprintf("within ±%.1f ms", float64(worst)/float64(time.Millisecond))
		}
	case "pause":
		into, noRetry, latest := 0, 0, time.Duration(0)
		first := true
		for _, c := range cells {
			into += c.IntoKnown
			switch {
			case !c.RetrySeen:
				noRetry++
			case first || c.RetryDelay > latest:
				latest, first = c.RetryDelay, false
			}
		}
		retry := "no retry"
		if !first {
			retry = signedMs(latest)
		}
		s = fmt.Sprintf("%d · %s", into, retry)
		if noRetry > 0 && !first {
			s += fmt.Sprintf(", no retry in %d", noRetry)
		}
	default:
		worst := 0.0
		var ratios []float64
		for _, c := range cells {
			worst = max(worst, c.RefusedPct())
			ratios = append(ratios, c.Ratio())
		}
		slices.Sort(ratios)
		med := ratios[len(ratios)/2]
		if len(ratios)%2 == 0 {
			med = (ratios[len(ratios)/2-1] + med) / 2
		}
		s = fmt.Sprintf("%.1f %% · %.2f×", worst, med)
	}
	if failed > 0 {
		s += fmt.Sprintf(" · **%d failed**", failed)
	}
	return s
}

// signedMs formats d in whole milliseconds with its sign.
func signedMs(d time.Duration) string {
	ms := d.Round(time.Millisecond).Milliseconds()
	if ms < 0 {
		return fmt.Sprintf("−%d ms", -ms)
	}
	return fmt.Sprintf("+%d ms", ms)
}

// shortDate writes an RFC 3339 time as "2006-01-02 15:04 UTC".
func shortDate(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return orUnknown(s)
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// rounds is how many rounds the results hold: the most values of a
// benchmark.
func rounds(r *results) int {
	n := 0
	for _, units := range r.values {
		n = max(n, len(units["ns/op"]))
	}
	return n
}
