package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fl := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	version := fl.String("version", "v0.1.0", "the version the modules are published at")
	out := fl.String("out", "", "pack: the module proxy directory to write")
	root := fl.String("root", "..", "the repository's root: module directories are relative to it")
	keep := fl.Bool("keep", false, "check: keep the temporary directory")
	_ = fl.Parse(os.Args[2:])
	dirs := make([]string, fl.NArg())
	for i, d := range fl.Args() {
		dirs[i] = filepath.Join(*root, d)
	}
	if len(dirs) == 0 {
		fail(fmt.Errorf("name the library modules' directories"))
	}
	var err error
	switch os.Args[1] {
	case "pack":
		if *out == "" {
			fail(fmt.Errorf("pack needs -out"))
		}
		_, err = packAll(*out, dirs, *version)
	case "check":
		err = check(dirs, *version, *keep)
	default:
		usage()
	}
	if err != nil {
		fail(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: release pack -out DIR [-version v0.1.0] [-root ..] MODULE_DIR...")
	fmt.Fprintln(os.Stderr, "       release check [-version v0.1.0] [-root ..] [-keep] MODULE_DIR...")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}

// check packs the modules into a proxy directory and installs them from it
// as a new user would, outside the workspace; see the package comment.
func check(dirs []string, version string, keep bool) error {
	tmp, err := os.MkdirTemp("", "headgate-release-")
	if err != nil {
		return err
	}
	defer func() {
		if keep {
			fmt.Println("kept", tmp)
			return
		}
		removeAll(tmp)
	}()
	proxy := filepath.Join(tmp, "proxy")
	start := time.Now()
	mods, err := packAll(proxy, dirs, version)
	if err != nil {
		return err
	}
	fmt.Printf("packed %d modules at %s into %s (%v)\n", len(mods), version, proxy, since(start))

	env, err := consumerEnv(tmp, proxy)
	if err != nil {
		return err
	}
	// Each module alone, in a directory of its own: its requires must
	// resolve from the proxy with nothing else in the build list.
	for _, m := range mods {
		dir := filepath.Join(tmp, "get-"+filepath.Base(m.dir))
		if err := newConsumer(dir, nil); err != nil {
			return err
		}
		start := time.Now()
		if err := run(dir, env, "go", "get", m.path+"@"+version); err != nil {
			return err
		}
		if err := run(dir, env, "go", "build", m.path+"/..."); err != nil {
			return err
		}
		if err := wantVersions(dir, env, mods, version); err != nil {
			return err
		}
		fmt.Printf("ok  go get %s@%s; go build %s/... (%v)\n", m.path, version, m.path, since(start))
	}

	// All of them together, wired as the README shows.
	src, err := os.ReadFile(filepath.Join("testdata", "consumer", "main.go"))
	if err != nil {
		return err
	}
	dir := filepath.Join(tmp, "consumer")
	if err := newConsumer(dir, src); err != nil {
		return err
	}
	start = time.Now()
	args := []string{"get"}
	for _, m := range mods {
		args = append(args, m.path+"@"+version)
	}
	steps := [][]string{
		append([]string{"go"}, args...),
		{"go", "mod", "tidy"},
		{"go", "vet", "."},
		{"go", "build", "-o", "consumer", "."},
	}
	for _, s := range steps {
		if err := run(dir, env, s[0], s[1:]...); err != nil {
			return err
		}
	}
	if err := wantVersions(dir, env, mods, version); err != nil {
		return err
	}
	if err := run(dir, env, filepath.Join(dir, "consumer")); err != nil {
		return err
	}
	fmt.Printf("ok  the consumer program gets, vets, builds and runs with every module at %s (%v)\n", version, since(start))
	return nil
}

// consumerEnv is the environment of a user outside the workspace whose
// GOPROXY lists the packed modules first. The module cache is a new one, so
// that a module packed by an earlier run is never reused; the usual module
// cache's download directory serves as a proxy for everything else, ahead
// of the usual proxy, so the check needs the network only for what was
// never downloaded here.
func consumerEnv(tmp, proxy string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOPROXY", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("go env: unexpected output %q", out)
	}
	usual, cache := lines[0], lines[1]
	proxies := "file://" + filepath.ToSlash(proxy)
	if cache != "" {
		proxies += ",file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download"))
	}
	if usual != "" && usual != "off" {
		proxies += "," + usual
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOPROXY="+proxies,
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		// -trimpath keeps the module cache's path out of the build cache's
		// keys, so a new module cache does not mean compiling every
		// dependency again.
		"GOFLAGS=-mod=mod -trimpath",
		"GONOSUMDB="+strings.TrimSuffix(modulePrefix, "/"),
		"GOTOOLCHAIN=local",
	), nil
}

// newConsumer makes dir a new module outside the workspace, with main.go
// holding src when src is not nil.
func newConsumer(dir string, src []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod := "module example.com/headgate-consumer\n\ngo 1.26\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if src == nil {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644)
}

// wantVersions fails unless every headgate module in dir's build list is
// one of mods, at version, and comes from the proxy (no replace).
func wantVersions(dir string, env []string, mods []libModule, version string) error {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Version}} {{if .Replace}}replaced{{end}}", "all")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go list -m all in %s: %v\n%s", dir, err, out)
	}
	known := map[string]bool{}
	for _, m := range mods {
		known[m.path] = true
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], modulePrefix) {
			continue
		}
		if !known[f[0]] || f[1] != version || len(f) > 2 {
			return fmt.Errorf("%s: build list has %q, want every headgate module at %s from the proxy", dir, line, version)
		}
	}
	return nil
}

// run runs name with args in dir, and returns its output in the error when
// it fails.
func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("in %s: %s %s: %v\n%s", dir, name, strings.Join(args, " "), err, buf.Bytes())
	}
	if name != "go" {
		os.Stdout.Write(buf.Bytes())
	}
	return nil
}

// removeAll removes dir, module cache included (the go command makes its
// files read-only).
func removeAll(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
