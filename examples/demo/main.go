// Command demo shows why headgate exists, in under a minute and with no
// network: it starts a rate-limited server on loopback (core/quotatest,
// GitHub-style headers) and sends the same batch through several clients in
// turn — no limiter, resty and go-retryablehttp with their own retries,
// x/time/rate, and headgate under net/http, resty, go-retryablehttp and
// go-kit — then prints what the server saw for each (requests sent, 429s,
// makespan against the ideal the limit allows, requests sent during a
// server pause) and draws the timeline as an SVG.
//
// Scenarios: default (every client configured at the real limit),
// misconfigured (configured at twice the real rate) and pause (the server pauses for 2 s once a
// third of the batch has arrived).
//
//	go run ./demo                          # all three scenarios
//	go run ./demo -scenario=pause -n 300   # one scenario, a smaller batch
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// scenario is one way of running the batch.
type scenario struct {
	name   string
	title  string
	factor int  // the rated clients are configured at factor × the server's rate
	pause  bool // the server pauses mid-run
}

var scenarios = []scenario{
	{name: "default", title: "every client configured at the server's real limit", factor: 1},
	{name: "misconfigured", title: "the rated clients configured at twice the server's real rate", factor: 2},
	{name: "pause", title: "the server pauses mid-run", factor: 1, pause: true},
}

// headerStyles are the -headers choices: what real providers send.
var headerStyles = map[string]quotatest.HeaderStyle{
	"github":  quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds,  // X-RateLimit-* with a Unix reset, Retry-After on 429
	"ietf":    quotatest.IETF | quotatest.RetryAfterSeconds,             // RateLimit + RateLimit-Policy, Retry-After on 429
	"ms":      quotatest.RetryAfterSeconds | quotatest.RetryAfterMillis, // Retry-After and retry-after-ms (LLM APIs)
	"seconds": quotatest.RetryAfterSeconds,                              // Retry-After only
}

func main() {
	if err := mainErr(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func mainErr(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	which := fs.String("scenario", "all", "default, misconfigured, pause or all")
	n := fs.Int("n", 600, "calls in the batch")
	workers := fs.Int("workers", 100, "goroutines sending the batch")
	rateFlag := fs.Int("rate", 400, "the server's limit, requests per second")
	burst := fs.Int("burst", 0, "the server's burst (default rate/10)")
	pause := fs.Duration("pause", 2*time.Second, "the server's pause in the pause scenario")
	headers := fs.String("headers", "github", "the server's rate-limit headers: github, ietf, ms or seconds")
	svgPath := fs.String("svg", "", "where to write the timeline (default ./headgate-demo.svg, or the temp dir)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *burst == 0 {
		*burst = max(1, *rateFlag/10)
	}
	style, ok := headerStyles[*headers]
	if !ok {
		return fmt.Errorf("-headers %q: want github, ietf, ms or seconds", *headers)
	}
	if *n < 1 || *workers < 1 || *rateFlag < 1 || *burst < 1 || *pause <= 0 {
		return errors.New("-n, -workers, -rate, -burst and -pause must be positive")
	}
	var run []scenario
	for _, s := range scenarios {
		if *which == "all" || *which == s.name {
			run = append(run, s)
		}
	}
	if len(run) == 0 {
		return fmt.Errorf("-scenario %q: want default, misconfigured, pause or all", *which)
	}

	cfg := config{n: *n, workers: *workers, rate: *rateFlag, burst: *burst, pause: *pause, headers: style}
	if isTerminal(os.Stderr) {
		cfg.progress = stderr
	}
	fmt.Fprintf(stdout, "server: %d requests/s, burst %d (GCRA), headers %s (%v), on loopback\n",
		cfg.rate, cfg.burst, *headers, style)
	fmt.Fprintf(stdout, "batch:  %d calls from %d goroutines through each client in turn\n", cfg.n, cfg.workers)
	fmt.Fprintf(stdout, "paced clients (x/time/rate, headgate) are configured at the server's exact rate and burst\n")

	var results []result
	for _, s := range run {
		var rows []result
		for _, c := range clients {
			if s.factor != 1 && !c.rated {
				continue
			}
			r, err := runOne(cfg, s, c)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", s.name, c.name, err)
			}
			rows = append(rows, r)
		}
		printTable(stdout, cfg, s, rows)
		results = append(results, rows...)
	}

	path, err := writeSVG(*svgPath, cfg, results)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\ntimeline: %s\n", path)
	return nil
}

// runOne runs one client; it is a variable so the test can count runs.
var runOne = run

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printTable prints one scenario's rows and the notes that go with them.
func printTable(w io.Writer, cfg config, s scenario, rows []result) {
	fmt.Fprintf(w, "\n== %s: %s", s.name, s.title)
	switch {
	case s.factor != 1:
		fmt.Fprintf(w, " (%d/s instead of %d/s)\n", cfg.rate*s.factor, cfg.rate)
	case s.pause:
		fmt.Fprintf(w, " (%v, once %d requests have arrived)\n", cfg.pause, cfg.pauseAfter())
	default:
		fmt.Fprintf(w, " (%d/s, burst %d)\n", cfg.rate, cfg.burst)
	}
	ideal := fmt.Sprintf("ideal = (n − burst) × interval = (%d − %d) × %v = %v", cfg.n, cfg.burst, cfg.interval(), fmtDur(cfg.ideal(s)))
	if s.pause {
		ideal = fmt.Sprintf("ideal = (n − 2 × burst) × interval + pause = (%d − %d) × %v + %v = %v (the server's quota is whole again after a pause)",
			cfg.n, 2*cfg.burst, cfg.interval(), cfg.pause, fmtDur(cfg.ideal(s)))
	}
	fmt.Fprintln(w, ideal)

	head := []string{"client", "sent", "429s", "failed calls", "makespan", "÷ ideal"}
	if s.pause {
		head = append(head, "sent in pause", "…after its 429")
	}
	var tab [][]string
	for _, r := range rows {
		row := []string{r.client, fmt.Sprint(r.sent), fmt.Sprint(r.refused), fmt.Sprintf("%d/%d", r.failed, r.calls),
			fmtDur(r.makespan), fmt.Sprintf("%.2f", r.ratio())}
		if s.pause {
			if r.paused {
				after := "–"
				if r.refusedInPause {
					after = fmt.Sprint(r.afterRefusal)
				}
				row = append(row, fmt.Sprint(r.inPause), after)
			} else {
				row = append(row, "no pause", "–")
			}
		}
		tab = append(tab, row)
	}
	printAligned(w, head, tab)

	if s.factor != 1 {
		fmt.Fprintln(w, "(the clients with no configured rate behave as in the default scenario and are not run again)")
	}
	if s.pause {
		fmt.Fprintln(w, "sent in pause: requests that arrived while the server was paused; …after its 429: of those, the ones")
		fmt.Fprintln(w, "sent after the client had received its first 429 from the pause")
	}
	for _, r := range rows {
		if r.leaked != 0 {
			fmt.Fprintf(w, "WARNING: %s left %d budget slots held\n", r.client, r.leaked)
		}
	}
}

// printAligned prints a table with columns padded to their widest cell,
// the first left-aligned and the others right-aligned.
func printAligned(w io.Writer, head []string, rows [][]string) {
	width := make([]int, len(head))
	for _, r := range append([][]string{head}, rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(head)
	for _, r := range rows {
		line(r)
	}
}

// fmtDur prints a duration to the millisecond, or in seconds with two
// decimals from a second up.
func fmtDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return d.Round(time.Millisecond).String()
}

// svgTarget picks the timeline's path: the flag, or ./headgate-demo.svg
// when the current directory is writable, or the temp dir.
func svgTarget(flagPath string) string {
	if flagPath != "" {
		return flagPath
	}
	const name = "headgate-demo.svg"
	if f, err := os.CreateTemp(".", ".headgate-demo-*"); err == nil {
		f.Close()
		os.Remove(f.Name())
		if abs, err := filepath.Abs(name); err == nil {
			return abs
		}
		return name
	}
	return filepath.Join(os.TempDir(), name)
}
