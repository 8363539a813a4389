package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// writeModule writes a module with gomod and one Go file into a new
// directory, and returns the directory.
func writeModule(t *testing.T, gomod string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A library module that requires a sibling at any version but the
// release's cannot be installed from a proxy (its replace is ignored
// there): readModule refuses it, naming the requirement.
func TestReadModuleRefusesASiblingAtAnotherVersion(t *testing.T) {
	dir := writeModule(t, `module github.com/headgate-go/headgate/resty

go 1.26

require github.com/headgate-go/headgate/core v0.0.0

replace github.com/headgate-go/headgate/core => ../core
`)
	_, err := readModule(dir, "v0.1.0")
	if err == nil || !strings.Contains(err.Error(), "requires github.com/headgate-go/headgate/core v0.0.0, but the release publishes it at v0.1.0") {
		t.Fatalf("readModule = %v, want the v0.0.0 requirement named", err)
	}
	if _, err := readModule(writeModule(t, "module example.com/other\n\ngo 1.26\n"), "v0.1.0"); err == nil {
		t.Fatal("readModule accepted a module outside github.com/headgate-go/headgate/")
	}
}

// pack lays the module out as the GOPROXY protocol says: list, .info, .mod
// (the go.mod as it is) and a .zip that x/mod/zip checks as valid for that
// module and version.
func TestPackWritesAProxyLayout(t *testing.T) {
	gomod := `module github.com/headgate-go/headgate/resty

go 1.26

require github.com/headgate-go/headgate/core v0.1.0
`
	m, err := readModule(writeModule(t, gomod), "v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if err := pack(proxy, m, "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	if err := pack(proxy, m, "v0.1.0"); err != nil { // again: the list stays one line
		t.Fatal(err)
	}
	vdir := filepath.Join(proxy, "github.com", "headgate-go", "headgate", "resty", "@v")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(vdir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("list"); got != "v0.1.0\n" {
		t.Errorf("list = %q, want %q", got, "v0.1.0\n")
	}
	if got := read("v0.1.0.mod"); got != gomod {
		t.Errorf(".mod = %q, want the go.mod as it is", got)
	}
	if got := read("v0.1.0.info"); !strings.Contains(got, `"Version":"v0.1.0"`) {
		t.Errorf(".info = %s, want the version", got)
	}
	mv := module.Version{Path: "github.com/headgate-go/headgate/resty", Version: "v0.1.0"}
	cf, err := zip.CheckZip(mv, filepath.Join(vdir, "v0.1.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Valid) != 2 { // go.mod, a.go
		t.Errorf("zip holds %v, want go.mod and a.go", cf.Valid)
	}
}
