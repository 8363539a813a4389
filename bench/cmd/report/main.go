// Command report runs headgate's side-by-side benchmarks (the bench
// module), writes the raw results with the machine, the Go version and the
// date to results/latest.txt (benchstat reads it as is), and turns them into
// the markdown comparison tables: results/latest.md, and the section between
// <!-- bench:begin --> and <!-- bench:end --> of the file -doc names
// (docs/BENCHMARKS.md). With -summary it also writes the README's summary
// table, between <!-- summary:begin --> and <!-- summary:end -->: a few rows
// of these benchmarks beside the feedback matrix's figures (-matrix, the
// results/matrix.json that cmd/matrix writes).
//
// Run it from the bench module:
//
//	cd bench && go run ./cmd/report                   # all benchmarks, 5 rounds (a few minutes)
//	go run ./cmd/report -from results/latest.txt -doc ../docs/BENCHMARKS.md -summary ../README.md   # tables only, no run
//
// The rounds are interleaved: every benchmark runs once per round, so a
// machine that gets busier halfway through slows every row alike, and each
// figure in the tables is the median of its rounds. Ratios compare rows of
// the same run only.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/headgate-go/headgate/bench/internal/mdsection"
)

// The benchmarks, by what they are run with: the micro benchmarks for a
// fixed time, the scenarios and the many-waiter runs once per round (one
// op is a whole batch).
const (
	microBench    = `^Benchmark(Admit|AdmitParallel|AdmitParallel4x|ParseFeedback|Transport|TransportParallel|Redis)$`
	scenarioBench = `^Benchmark(Scenario|Waiters)$`
)

func main() {
	if err := mainErr(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func mainErr(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("count", 5, "rounds: every benchmark runs once per round")
	benchtime := fs.String("benchtime", "300ms", "-benchtime of the micro benchmarks (the scenarios run 1x)")
	out := fs.String("out", "results/latest.txt", "where to write the raw results")
	md := fs.String("md", "results/latest.md", "where to write the markdown tables")
	doc := fs.String("doc", "", "a markdown file whose <!-- bench:begin --> … <!-- bench:end --> section is replaced with the tables")
	summaryTo := fs.String("summary", "", "a markdown file whose <!-- summary:begin --> … <!-- summary:end --> section is replaced with the summary table")
	matrixFrom := fs.String("matrix", "results/matrix.json", "the feedback matrix's figures, for -summary")
	from := fs.String("from", "", "read results from this file instead of running the benchmarks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 {
		return errors.New("-count must be at least 1")
	}

	var raw []byte
	rawPath := *out
	if *from != "" {
		rawPath = *from
		var err error
		if raw, err = os.ReadFile(*from); err != nil {
			return err
		}
	} else {
		if _, err := os.Stat("go.mod"); err != nil {
			return errors.New("run it in the bench module: cd bench && go run ./cmd/report")
		}
		var buf bytes.Buffer
		buf.WriteString(machineHeader(*rounds, *benchtime))
		for r := 1; r <= *rounds; r++ {
			fmt.Fprintf(stderr, "== round %d/%d\n", r, *rounds)
			for _, run := range [][]string{
				{"-bench", microBench, "-benchtime", *benchtime},
				{"-bench", scenarioBench, "-benchtime", "1x"},
			} {
				if err := goTest(&buf, stderr, run...); err != nil {
					return err
				}
			}
		}
		raw = buf.Bytes()
		if err := os.WriteFile(*out, raw, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "raw results: %s\n", *out)
	}

	res, err := parse(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if *md != "" {
		if err := os.WriteFile(*md, []byte(render(res, mdsection.Link(*md, rawPath))), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tables: %s\n", *md)
	}
	if *doc != "" {
		if err := replaceSection(*doc, render(res, mdsection.Link(*doc, rawPath))); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "updated: %s\n", *doc)
	}
	if *summaryTo != "" {
		m, err := readMatrix(*matrixFrom)
		if err != nil {
			return fmt.Errorf("-summary needs the matrix's figures: %w", err)
		}
		docs := "docs/BENCHMARKS.md" // where make bench writes them
		if *doc != "" {
			docs = mdsection.Link(*summaryTo, *doc)
		}
		if err := mdsection.Replace(*summaryTo, "<!-- summary:begin -->", "<!-- summary:end -->", summary(res, m, docs)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "updated: %s\n", *summaryTo)
	}
	if *md == "" && *doc == "" && *summaryTo == "" {
		fmt.Fprint(stdout, render(res, rawPath))
	}
	return nil
}

// goTest runs one `go test -bench` of the module and appends its output to
// buf, echoing the result lines to progress.
func goTest(buf *bytes.Buffer, progress io.Writer, extra ...string) error {
	args := append([]string{"test", "-run", "^$", "-benchmem", "-count", "1"}, extra...)
	args = append(args, ".")
	cmd := exec.Command("go", args...)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, &lineFilter{w: progress})
	cmd.Stderr = progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	buf.Write(out.Bytes())
	return nil
}

// lineFilter passes on the benchmark result lines only, whole: go test
// writes a benchmark's name before it runs and its figures after.
type lineFilter struct {
	w       io.Writer
	pending []byte
}

func (f *lineFilter) Write(p []byte) (int, error) {
	f.pending = append(f.pending, p...)
	for {
		i := bytes.IndexByte(f.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		if line := f.pending[:i+1]; bytes.HasPrefix(line, []byte("Benchmark")) {
			f.w.Write(line)
		}
		f.pending = f.pending[i+1:]
	}
}

// machineHeader is the results file's preamble: benchstat configuration
// lines (key: value) naming the machine, the toolchain and the date.
func machineHeader(rounds int, benchtime string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# headgate benchmarks, written by `go run ./cmd/report` in bench/ (compare two files with benchstat)\n")
	fmt.Fprintf(&b, "machine-nproc: %s\n", nproc())
	fmt.Fprintf(&b, "machine-cpu: %s\n", cpuModel())
	fmt.Fprintf(&b, "go-version: %s\n", goVersion())
	fmt.Fprintf(&b, "date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "rounds: %d\n", rounds)
	fmt.Fprintf(&b, "micro-benchtime: %s\n", benchtime)
	return b.String()
}

// nproc is the number of CPUs available, as nproc(1) prints it.
func nproc() string {
	if out, err := exec.Command("nproc").Output(); err == nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			return s
		}
	}
	return fmt.Sprint(runtime.NumCPU())
}

// cpuModel is the first "model name" of /proc/cpuinfo, or what the
// platform says elsewhere.
func cpuModel() string {
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	if out, err := exec.Command("sysctl", "-n", "machdep.cpu.brand_string").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

// goVersion is what `go version` prints: the toolchain the benchmarks ran with.
func goVersion() string {
	out, err := exec.Command("go", "version").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(out))
}

// replaceSection replaces the section between <!-- bench:begin --> and
// <!-- bench:end --> of the markdown file at path.
func replaceSection(path, section string) error {
	return mdsection.Replace(path, "<!-- bench:begin -->", "<!-- bench:end -->", section)
}
