// Command report runs headgate's side-by-side benchmarks (the bench
// module), writes the raw results with the machine, the Go version and the
// date to results/latest.txt (benchstat reads it as is), and turns them into
// the markdown comparison table: results/latest.md, and the README section
// between <!-- bench:begin --> and <!-- bench:end --> when -readme names a
// file.
//
// Run it from the bench module:
//
//	cd bench && go run ./cmd/report                   # all benchmarks, 5 rounds (a few minutes)
//	go run ./cmd/report -from results/latest.txt -readme ../README.md   # tables only, no run
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
	readme := fs.String("readme", "", "a markdown file whose <!-- bench:begin --> … <!-- bench:end --> section is replaced with the tables")
	from := fs.String("from", "", "read results from this file instead of running the benchmarks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 {
		return errors.New("-count must be at least 1")
	}

	var raw []byte
	if *from != "" {
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
	tables := render(res)
	if *md != "" {
		if err := os.WriteFile(*md, []byte(tables), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tables: %s\n", *md)
	}
	if *readme != "" {
		if err := replaceSection(*readme, tables); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "updated: %s\n", *readme)
	}
	if *md == "" && *readme == "" {
		fmt.Fprint(stdout, tables)
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

// replaceSection replaces the README section between <!-- bench:begin -->
// and <!-- bench:end --> of the markdown file at path.
func replaceSection(path, section string) error {
	return mdsection.Replace(path, "<!-- bench:begin -->", "<!-- bench:end -->", section)
}
