package mdsection

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLinkRelativeToTheDoc(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	os.MkdirAll(filepath.Join(root, "bench", "results"), 0o755)
	target := filepath.Join(root, "bench", "results", "latest.txt")
	for _, c := range []struct{ doc, want string }{
		{filepath.Join(root, "docs", "BENCHMARKS.md"), "[`bench/results/latest.txt`](../bench/results/latest.txt)"},
		{filepath.Join(root, "README.md"), "[`bench/results/latest.txt`](bench/results/latest.txt)"},
		{filepath.Join(root, "bench", "results", "latest.md"), "[`bench/results/latest.txt`](latest.txt)"},
	} {
		if got := Link(c.doc, target); got != c.want {
			t.Errorf("Link(%s, %s) = %s, want %s", c.doc, target, got, c.want)
		}
	}
}

func TestLinkOutsideARepository(t *testing.T) {
	dir := t.TempDir()
	got := Link(filepath.Join(dir, "a", "doc.md"), filepath.Join(dir, "raw.txt"))
	if want := "[`raw.txt`](../raw.txt)"; got != want {
		t.Errorf("Link = %s, want %s", got, want)
	}
}
