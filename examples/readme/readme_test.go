package readme_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README and the files whose marked regions are its snippets: this
// package's tests, and the sdks module's (compiled by its own tests).
const readmePath = "../../README.md"

var snippetFiles = []string{"*_test.go", "../../sdks/readme*_test.go"}

// maxCodeLines bounds a snippet: lines of code, comments and blank lines
// aside.
const maxCodeLines = 10

// maxReadmeLines bounds the README (issue 31): a page a user reads, the
// rest in docs/.
const maxReadmeLines = 350

// A region is a snippet as it is compiled: the lines between
// "// readme:begin" and "// readme:end", less their indentation.
type region struct {
	where   string // file:line of its first line
	text    string
	imports map[string]string // the file's imports: path → the name it is imported as
}

var importComment = regexp.MustCompile(`^// import (?:([A-Za-z_][A-Za-z0-9_]*) )?("[^"]+")$`)

// TestREADMESnippetsAreCompiled: every ```go block of the README is one of
// the compiled regions, word for word, and every region is in the README;
// a snippet's "// import" comment names an import of the file it is
// compiled in, under the same name.
func TestREADMESnippetsAreCompiled(t *testing.T) {
	blocks := goBlocks(t, readmePath)
	regions := readRegions(t)
	if len(blocks) == 0 || len(regions) == 0 {
		t.Fatalf("%d go blocks in %s, %d regions in %v", len(blocks), readmePath, len(regions), snippetFiles)
	}
	byText := map[string]region{}
	for _, r := range regions {
		if prev, dup := byText[r.text]; dup {
			t.Errorf("%s and %s hold the same snippet", prev.where, r.where)
		}
		byText[r.text] = r
	}
	inReadme := map[string]bool{}
	for _, b := range blocks {
		inReadme[b.text] = true
		r, ok := byText[b.text]
		if !ok {
			t.Errorf("README.md:%d: this go block is compiled nowhere (no region of %v is it, word for word):\n%s",
				b.line, snippetFiles, b.text)
			continue
		}
		for i, line := range strings.Split(r.text, "\n") {
			m := importComment.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			path, _ := strconv.Unquote(m[2])
			name, imported := r.imports[path]
			switch {
			case !imported:
				t.Errorf("README.md:%d: line %d imports %s, which %s does not", b.line, i+1, m[2], r.where)
			case name != m[1]:
				t.Errorf("README.md:%d: line %d imports %s as %q, %s as %q", b.line, i+1, m[2], m[1], r.where, name)
			}
		}
	}
	for _, r := range regions {
		if !inReadme[r.text] {
			t.Errorf("%s: this region is in no go block of the README:\n%s", r.where, r.text)
		}
	}
}

// TestREADMEFitsItsBounds: the README stays a page a user reads, and each
// snippet ten lines of code or fewer.
func TestREADMEFitsItsBounds(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; at most %d (what does not fit goes to docs/)", n, maxReadmeLines)
	}
	for _, b := range goBlocks(t, readmePath) {
		code := 0
		for _, line := range strings.Split(b.text, "\n") {
			if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "//") {
				code++
			}
		}
		if code > maxCodeLines {
			t.Errorf("README.md:%d: a snippet of %d lines of code; at most %d", b.line, code, maxCodeLines)
		}
	}
}

type block struct {
	line int // of its first line of code
	text string
}

// goBlocks returns the ```go blocks of the markdown file at path.
func goBlocks(t *testing.T, path string) []block {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		start := i + 1
		for i = start; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: a go block that never ends", path, start)
		}
		out = append(out, block{line: start + 1, text: normalize(lines[start:i])})
	}
	return out
}

// readRegions returns every region of the snippet files.
func readRegions(t *testing.T) []region {
	t.Helper()
	var out []region
	for _, pattern := range snippetFiles {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no snippet files match %s (%v)", pattern, err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, raw, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			imports := map[string]string{}
			for _, spec := range parsed.Imports {
				path, _ := strconv.Unquote(spec.Path.Value)
				imports[path] = ""
				if spec.Name != nil {
					imports[path] = spec.Name.Name
				}
			}
			lines := strings.Split(string(raw), "\n")
			for i := 0; i < len(lines); i++ {
				if strings.TrimSpace(lines[i]) != "// readme:begin" {
					continue
				}
				indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], "\t "))]
				start := i + 1
				for i = start; i < len(lines) && strings.TrimSpace(lines[i]) != "// readme:end"; i++ {
				}
				if i == len(lines) {
					t.Fatalf("%s:%d: a region that never ends", f, start)
				}
				var body []string
				for _, line := range lines[start:i] {
					body = append(body, strings.TrimPrefix(line, indent))
				}
				out = append(out, region{where: f + ":" + strconv.Itoa(start+1), text: normalize(body), imports: imports})
			}
		}
	}
	return out
}

// normalize joins lines without their trailing spaces or the blank lines
// at either end.
func normalize(lines []string) string {
	var out []string
	for _, l := range lines {
		out = append(out, strings.TrimRight(l, " \t\r"))
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}
