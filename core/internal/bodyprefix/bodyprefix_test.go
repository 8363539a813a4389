package bodyprefix

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type closer struct {
	io.Reader
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

// TestRead: the prefix, then the body whole as sent, for a body longer and
// shorter than the prefix; Close reaches the body.
func TestRead(t *testing.T) {
	for _, s := range []string{"", "short", "a body longer than the prefix"} {
		rc := &closer{Reader: strings.NewReader(s)}
		prefix, body := Read(rc, 8)
		if want := s[:min(len(s), 8)]; string(prefix) != want {
			t.Errorf("%q: prefix %q, want %q", s, prefix, want)
		}
		got, err := io.ReadAll(body)
		if err != nil || string(got) != s {
			t.Errorf("%q: read %q, %v; want it whole", s, got, err)
		}
		if body.Close(); !rc.closed {
			t.Errorf("%q: Close did not close the body", s)
		}
	}
}

// TestReadError: a read error met while reading the prefix comes after
// the bytes read before it.
func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	_, body := Read(&closer{Reader: io.MultiReader(strings.NewReader("abc"), errReader{boom})}, 8)
	got, err := io.ReadAll(body)
	if string(got) != "abc" || !errors.Is(err, boom) {
		t.Fatalf("read %q, %v; want \"abc\", boom", got, err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
