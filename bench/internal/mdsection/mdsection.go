// Package mdsection replaces a generated section of a markdown file: the
// lines between a begin and an end marker, each on a line of its own.
package mdsection

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Replace replaces the lines between the begin and end marker lines of the
// markdown file at path with section; the markers stay. A marker counts
// only on a line of its own, so prose that quotes one is left alone.
func Replace(path, begin, end, section string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(old), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == begin })
	j := -1
	if i >= 0 {
		if k := slices.IndexFunc(lines[i+1:], func(l string) bool { return strings.TrimSpace(l) == end }); k >= 0 {
			j = i + 1 + k
		}
	}
	if j < 0 {
		return fmt.Errorf("%s: no %s … %s section (each marker on a line of its own)", path, begin, end)
	}
	if !strings.HasSuffix(section, "\n") {
		section += "\n"
	}
	s := strings.Join(lines[:i+1], "") + section + strings.Join(lines[j:], "")
	return os.WriteFile(path, []byte(s), 0o644)
}

// Link is a markdown link from the file at doc to the file at target: its
// text is target's path from the repository root (the directory holding
// go.work), or its base name outside a repository; its destination is
// target's path relative to doc's directory, so the link works wherever
// the doc lives.
func Link(doc, target string) string {
	text := filepath.Base(target)
	dest := filepath.ToSlash(target)
	absTarget, err1 := filepath.Abs(target)
	absDoc, err2 := filepath.Abs(doc)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("[`%s`](%s)", text, dest)
	}
	if rel, err := filepath.Rel(filepath.Dir(absDoc), absTarget); err == nil {
		dest = filepath.ToSlash(rel)
	}
	for dir := filepath.Dir(absTarget); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			if rel, err := filepath.Rel(dir, absTarget); err == nil {
				text = filepath.ToSlash(rel)
			}
			break
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	return fmt.Sprintf("[`%s`](%s)", text, dest)
}
