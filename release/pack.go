package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// modulePrefix is the path every headgate module starts with.
const modulePrefix = "github.com/headgate-go/headgate/"

// A libModule is one library module of the repository, read from its go.mod.
type libModule struct {
	dir   string // its directory
	path  string // its module path
	gomod []byte // its go.mod, served as the proxy's .mod file
}

// readModule reads dir's go.mod and checks that every headgate module it
// requires is required at version, the version the release publishes them
// at: a replace is ignored when the module is a dependency, so any other
// version would be asked of the proxy, where it does not exist.
func readModule(dir, version string) (libModule, error) {
	name := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return libModule{}, err
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return libModule{}, err
	}
	if f.Module == nil {
		return libModule{}, fmt.Errorf("%s: no module line", name)
	}
	m := libModule{dir: dir, path: f.Module.Mod.Path, gomod: data}
	if !strings.HasPrefix(m.path, modulePrefix) {
		return libModule{}, fmt.Errorf("%s: module %s is not under %s", name, m.path, modulePrefix)
	}
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, modulePrefix) && r.Mod.Version != version {
			return libModule{}, fmt.Errorf("%s: requires %s %s, but the release publishes it at %s", name, r.Mod.Path, r.Mod.Version, version)
		}
	}
	return m, nil
}

// pack writes m at version into the module proxy directory proxy, laid out
// as the GOPROXY protocol says (https://go.dev/ref/mod#goproxy-protocol).
func pack(proxy string, m libModule, version string) error {
	mv := module.Version{Path: m.path, Version: version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return err
	}
	esc, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(zf, mv, m.dir); err != nil {
		zf.Close()
		return fmt.Errorf("packing %s: %w", m.dir, err)
	}
	if err := zf.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), m.gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return err
	}
	return addToList(filepath.Join(vdir, "list"), version)
}

// addToList adds version to the proxy's list file of a module.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	seen := map[string]bool{version: true}
	for _, v := range strings.Fields(string(data)) {
		seen[v] = true
	}
	versions := make([]string, 0, len(seen))
	for v := range seen {
		versions = append(versions, v)
	}
	sort.Strings(versions)
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// packAll reads and packs every module directory in dirs into proxy.
func packAll(proxy string, dirs []string, version string) ([]libModule, error) {
	mods := make([]libModule, 0, len(dirs))
	for _, dir := range dirs {
		m, err := readModule(dir, version)
		if err != nil {
			return nil, err
		}
		if err := pack(proxy, m, version); err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	return mods, nil
}
