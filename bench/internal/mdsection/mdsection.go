// Package mdsection replaces a generated section of a markdown file: the
// lines between a begin and an end marker, each on a line of its own.
package mdsection

import (
	"fmt"
	"os"
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
