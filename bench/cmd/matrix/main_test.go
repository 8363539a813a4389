package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFromFileWritesTheDoc: -from -doc rewrites the doc's matrix section
// from a results file, linking that file from where the doc lives.
func TestFromFileWritesTheDoc(t *testing.T) {
	dir := t.TempDir()
	figures, doc := filepath.Join(dir, "results", "matrix.json"), filepath.Join(dir, "docs", "BENCHMARKS.md")
	os.MkdirAll(filepath.Dir(figures), 0o755)
	os.MkdirAll(filepath.Dir(doc), 0o755)
	os.WriteFile(figures, []byte(`{"machine": "Test CPU (2 CPUs)", "date": "2026-01-02T04:05:06Z", "command": "cd bench && go run ./cmd/matrix",`+
		`"workload": {"N": 500, "Workers": 100, "Rate": 100, "Burst": 10, "MaxTries": 6},`+
		`"results": [{"Server": "s", "Scenario": "exact", "Client": "hgkit", "Calls": 500, "Refused": 1, "Makespan": 1000000000, "Ideal": 1000000000}]}`), 0o644)
	os.WriteFile(doc, []byte("# b\n<!-- matrix:begin -->\nold\n<!-- matrix:end -->\ntail\n"), 0o644)
	var out strings.Builder
	if err := mainErr([]string{"-from", figures, "-md", "", "-doc", doc}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(doc)
	for _, want := range []string{"Measured on Test CPU (2 CPUs)", "[`matrix.json`](../results/matrix.json). Each cell: 500 calls", "| s | 0.2% · 1.00× |", "<!-- matrix:end -->\ntail\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the doc lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "\nold\n") {
		t.Errorf("the old section is still there:\n%s", got)
	}
}
