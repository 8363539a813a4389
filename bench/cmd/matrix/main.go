// Command matrix runs the feedback matrix of issue 14 (package
// bench/matrix) and writes its tables: results/matrix.json (every cell's
// figures, with the machine and the date), results/matrix.md, and the
// section between <!-- matrix:begin --> and <!-- matrix:end --> of the
// file -doc names (docs/BENCHMARKS.md). The README's summary of it is
// written by cmd/report -summary, from results/matrix.json.
//
// Two parts: the quotatest servers in virtual time (go test's synctest
// bubble: exact figures, no load noise, a few seconds), and every server
// over loopback in real time, each cell on its own server, -parallel at a
// time (one per CPU by default: 100 requests per second is light work, but
// a loaded machine delays paced requests and distorts the figures). Run it
// from the bench module:
//
//	cd bench && go run ./cmd/matrix                    # the whole matrix (about 20 minutes on 2 CPUs)
//	go run ./cmd/matrix -quick                         # a subset (about a minute)
//	go run ./cmd/matrix -virtual=false -scenarios half -clients "headgate transport" -md "" -out /tmp/m.json   # a few cells
//	go run ./cmd/matrix -from results/matrix.json -doc ../docs/BENCHMARKS.md   # tables only, no run
//	go run ./cmd/matrix -virtual=false -servers "fiber limiter · fixed" -scenarios exact -md "" -out /tmp/m.json -trace /tmp/m.trace   # and every request of those cells
//
// With -family N it runs issue 30's family instead (package bench/matrix,
// family.go): N draws of random servers and deployments from a fresh seed
// (or -seed), in virtual time (go test), and prints the distribution as
// markdown, with the worst draws and the command that replays each; -md
// writes it to a file, -doc into the file's section between
// <!-- family:begin --> and <!-- family:end --> (-section names another),
// -out every draw's figures (JSON):
//
//	go run ./cmd/matrix -family 1000                   # a fresh seed (about a minute)
//	go run ./cmd/matrix -family 200 -seed 42 -doc ../docs/BENCHMARKS.md
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/headgate-go/headgate/bench/internal/mdsection"
	"github.com/headgate-go/headgate/bench/matrix"
)

// run is what results/matrix.json holds.
type run struct {
	Machine  string          `json:"machine"`
	Go       string          `json:"go"`
	Date     string          `json:"date"`
	Command  string          `json:"command"`
	Workload matrix.Workload `json:"workload"`
	Virtual  string          `json:"virtual"` // the virtual-time tables, markdown
	Results  []matrix.Result `json:"results"` // loopback
}

func main() {
	if err := mainErr(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(1)
	}
}

func mainErr(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a subset: 5 servers, the baseline and the transport, 3 scenarios")
	parallel := fs.Int("parallel", runtime.NumCPU(), "loopback cells run at once, each on its own server (more than the CPUs distorts the figures)")
	virtual := fs.Bool("virtual", true, "also run the quotatest cells in virtual time (go test)")
	out := fs.String("out", "results/matrix.json", "where to write every cell's figures")
	md := fs.String("md", "results/matrix.md", "where to write the markdown tables")
	doc := fs.String("doc", "", "a markdown file whose <!-- matrix:begin --> … <!-- matrix:end --> section is replaced with the tables")
	from := fs.String("from", "", "read the figures from this file instead of running the matrix")
	onlyServers := fs.String("servers", "", "run only these servers: names or name prefixes, comma-separated")
	onlyScenarios := fs.String("scenarios", "", "run only these scenarios, comma-separated (exact, 2x, half, pause, learned)")
	trace := fs.String("trace", "", "write every loopback cell's per-request trace (send, answer, arrival, window, status, quota headers) to this file")
	onlyClients := fs.String("clients", "", "run only these clients: names or name prefixes, comma-separated")
	age := fs.Duration("age", 0, "start each loopback batch this long after its server: a limiter that has run a while (httprate's windows, begun when it is built, then turn mid-batch)")
	family := fs.Int("family", 0, "run issue 30's family of this many random draws (virtual time) instead of the matrix, and print its distribution")
	seed := fs.Uint64("seed", 0, "with -family: the family's seed (0: a fresh one, printed)")
	section := fs.String("section", "family", "with -family and -doc: the section of the file to replace, <!-- NAME:begin --> … <!-- NAME:end -->")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *family > 0 {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		opt := func(name, v string) string {
			if set[name] {
				return v
			}
			return ""
		}
		return familyMain(*family, *seed, opt("out", *out), opt("md", *md), *doc, *section, args, stdout, stderr)
	}

	var r run
	figures := *out
	if *from != "" {
		figures = *from
		raw, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
	} else {
		if _, err := os.Stat("go.mod"); err != nil {
			return errors.New("run it in the bench module: cd bench && go run ./cmd/matrix")
		}
		var err error
		servers, scenarios, clients := matrix.Servers, matrix.Scenarios, matrix.Clients
		if *quick {
			servers = pick(matrix.ServerByName, "quotatest GCRA · GitHub", "quotatest fixed · GitHub", "go-chi/httprate", "go-redis/redis_rate", "fiber limiter · fixed")
			scenarios = pick(matrix.ScenarioByName, "exact", "2x", "pause")
			clients = pick(matrix.ClientByName, "x/time/rate", "headgate transport")
		}
		if *onlyServers != "" {
			servers = pick(matrix.ServerByName, strings.Split(*onlyServers, ",")...)
		}
		if *onlyScenarios != "" {
			scenarios = pick(matrix.ScenarioByName, strings.Split(*onlyScenarios, ",")...)
		}
		if *onlyClients != "" {
			clients = pick(matrix.ClientByName, strings.Split(*onlyClients, ",")...)
		}
		if *age > 0 {
			servers = slices.Clone(servers)
			for i := range servers {
				servers[i] = matrix.Aged(servers[i], *age)
			}
		}
		cells := matrix.Cells(servers, scenarios, clients)
		if len(cells) == 0 {
			return errors.New("no cell matches -servers, -scenarios and -clients")
		}
		if r, err = measure(cells, *parallel, *virtual, *trace, stderr); err != nil {
			return err
		}
		r.Command = "cd bench && go run ./cmd/matrix " + strings.Join(args, " ")
		raw, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(raw, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "figures: %s\n", *out)
	}

	if *md != "" {
		if err := os.WriteFile(*md, []byte(render(r, mdsection.Link(*md, figures))), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tables: %s\n", *md)
	}
	if *doc != "" {
		if err := mdsection.Replace(*doc, "<!-- matrix:begin -->", "<!-- matrix:end -->", render(r, mdsection.Link(*doc, figures))); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "updated: %s\n", *doc)
	}
	if *md == "" && *doc == "" {
		fmt.Fprint(stdout, render(r, figures))
	}
	return nil
}

// familyMain runs the family as go test does (TestFamily, in virtual
// time), reads every draw's figures back and writes the distribution: to
// md, into doc's section, or else to stdout; out, if set, gets the
// figures as JSON.
func familyMain(draws int, seed uint64, out, md, doc, section string, args []string, stdout, progress io.Writer) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it in the bench module: cd bench && go run ./cmd/matrix -family N")
	}
	f, err := os.CreateTemp("", "family-*.json")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	fmt.Fprintf(progress, "== the family: %d draws in virtual time (go test -run 'TestFamily$' ./matrix)\n", draws)
	cmd := exec.Command("go", "test", "-count=1", "-timeout=0", "-run", "^TestFamily$", "./matrix", "-args",
		"-family.draws", fmt.Sprint(draws), "-family.seed", fmt.Sprint(seed), "-family.out", name)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	testErr := cmd.Run()
	raw, err := os.ReadFile(name)
	if err != nil || len(raw) == 0 {
		return fmt.Errorf("go test wrote no figures: %v\n%s", testErr, log.String())
	}
	var run struct {
		Seed    uint64              `json:"seed"`
		Draws   []matrix.DrawResult `json:"draws"`
		Elapsed time.Duration       `json:"elapsed"`
	}
	if err := json.Unmarshal(raw, &run); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if out != "" {
		if err := os.WriteFile(out, raw, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "figures: %s\n", out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Measured on %s, %s, %s, by `cd bench && go run ./cmd/matrix %s` (%v of wall time); "+
		"replay it with `-seed %d`, a draw alone with the command beside it.\n\n",
		machine(), goVersion(), time.Now().UTC().Format(time.RFC3339), strings.Join(args, " "), run.Elapsed.Round(time.Second), run.Seed)
	b.WriteString(matrix.RenderFamily(run.Seed, run.Draws))
	if misses := matrix.FamilyMisses(run.Draws); len(misses) > 0 {
		b.WriteString("\nIssue 30's wants missed (TestFamilyWants):\n\n")
		b.WriteString(matrix.MissTable(misses))
	} else {
		b.WriteString("\nEvery one of issue 30's wants met (TestFamilyWants).\n")
	}
	text := b.String()
	if md != "" {
		if err := os.WriteFile(md, []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tables: %s\n", md)
	}
	if doc != "" {
		if err := mdsection.Replace(doc, "<!-- "+section+":begin -->", "<!-- "+section+":end -->", text); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "updated: %s\n", doc)
	}
	if md == "" && doc == "" {
		fmt.Fprint(stdout, text)
	}
	return nil
}

// measure runs the virtual part (as go test) and the loopback cells.
func measure(cells []matrix.Cell, parallel int, virtual bool, trace string, progress io.Writer) (run, error) {
	r := run{Machine: machine(), Go: goVersion(), Date: time.Now().UTC().Format(time.RFC3339), Workload: matrix.Issue14}
	if virtual {
		fmt.Fprintln(progress, "== virtual time: the quotatest servers (go test -run TestWantsInVirtualTime ./matrix)")
		v, err := virtualTables()
		if err != nil {
			return r, err
		}
		r.Virtual = v
	}

	env := &matrix.Env{Workload: matrix.Issue14, Slack: 2 * time.Millisecond}
	if trace != "" {
		f, err := os.Create(trace)
		if err != nil {
			return r, err
		}
		defer f.Close()
		tw := bufio.NewWriter(f)
		defer tw.Flush()
		env.Trace = tw
	}
	redis, err := matrix.StartRedis()
	if err != nil {
		fmt.Fprintf(progress, "no redis: the redis_rate cells are skipped (%v)\n", err)
	} else {
		defer redis.Stop()
		env.RedisAddr = redis.Addr
	}
	fmt.Fprintf(progress, "== loopback: %d cells, %d at a time\n", len(cells), parallel)
	start := time.Now()
	r.Results, err = env.RunAll(context.Background(), cells, parallel, func(done int, c matrix.Result) {
		figures := c.Skipped
		if figures == "" {
			figures = c.Figures()
		}
		fmt.Fprintf(progress, "[%3d/%d %4.0fs] %-7s %-40.40s %-24.24s %s\n", done, len(cells), time.Since(start).Seconds(),
			c.Scenario, c.Server, c.Client, figures)
	})
	return r, err
}

func pick[T any](by func(string) (T, bool), names ...string) []T {
	var out []T
	for _, n := range names {
		if v, ok := by(n); ok {
			out = append(out, v)
		}
	}
	return out
}

// virtualTables runs the synctest matrix and returns its tables.
func virtualTables() (string, error) {
	f, err := os.CreateTemp("", "matrix-virtual-*.md")
	if err != nil {
		return "", err
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestWantsInVirtualTime$", "./matrix", "-args", "-virtual.out", name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	testErr := cmd.Run()
	tables, err := os.ReadFile(name)
	if err != nil || len(tables) == 0 {
		return "", fmt.Errorf("go test wrote no tables: %v\n%s", testErr, out.String())
	}
	// A failed want (outside the issue's pending list) is reported, not fatal:
	// the tables are the figures either way.
	if testErr != nil {
		fmt.Fprintf(os.Stderr, "note: the virtual wants test failed:\n%s", lastLines(out.String(), 20))
	}
	return string(tables), nil
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "")
}

// render is the doc's section: the run's setting, then both parts' tables;
// figures is the link to every cell's figures.
func render(r run, figures string) string {
	var b strings.Builder
	w := r.Workload
	fmt.Fprintf(&b, "Measured on %s, %s, %s, by `%s`; every cell's figures are in\n", r.Machine, r.Go, r.Date, strings.TrimSpace(r.Command))
	fmt.Fprintf(&b, "%s. Each cell: %d calls from %d goroutines against a fresh server\n", figures, w.N, w.Workers)
	fmt.Fprintf(&b, "admitting %d requests per second (burst %d for GCRA servers; window servers admit %d per 1 s window); up to %d tries per\n", w.Rate, w.Burst, w.Rate, w.MaxTries)
	fmt.Fprintf(&b, "call. Ideal = (n − burst) ÷ rate (+ the pause). Source: `bench/matrix`.\n\n")
	if r.Virtual != "" {
		b.WriteString("#### quotatest servers, in virtual time (exact figures)\n\n")
		b.WriteString(r.Virtual)
		b.WriteString("\n")
	}
	if len(r.Results) > 0 {
		b.WriteString("#### Over loopback, in real time (quotatest and real limiter libraries)\n\n")
		b.WriteString(matrix.Render(r.Results))
	}
	return b.String()
}

// machine names the CPU and how many there are.
func machine() string {
	model := runtime.GOOS + "/" + runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s (%d CPUs)", model, runtime.NumCPU())
}

func goVersion() string {
	out, err := exec.Command("go", "version").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(out))
}
