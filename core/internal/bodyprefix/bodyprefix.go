// Package bodyprefix reads the first bytes of a response body and puts
// them back in front of the rest. Its invariant: whoever reads the body
// it returns reads the body as sent, then the error the first read ended
// with, if it was not the body's end.
package bodyprefix

import "io"

// Read reads n bytes of rc, or up to its end, and returns them with a body
// that serves them again, then the rest of rc. It waits for those bytes or
// the end of rc.
func Read(rc io.ReadCloser, n int) ([]byte, io.ReadCloser) {
	buf := make([]byte, n)
	m, err := io.ReadAtLeast(rc, buf, n)
	return buf[:m], &body{prefix: buf[:m], err: err, rc: rc}
}

// body serves a prefix already read from rc, then the rest of rc. err is
// what reading the prefix ended with: nil when rc has more, io.EOF or
// io.ErrUnexpectedEOF when the prefix is the whole body, or a read error,
// returned once the prefix is served.
type body struct {
	prefix []byte
	err    error
	rc     io.ReadCloser
}

func (b *body) Read(p []byte) (int, error) {
	if len(b.prefix) > 0 {
		n := copy(p, b.prefix)
		b.prefix = b.prefix[n:]
		return n, nil
	}
	switch b.err {
	case nil:
		return b.rc.Read(p)
	case io.ErrUnexpectedEOF:
		return 0, io.EOF // a body shorter than the prefix asked for
	default:
		return 0, b.err
	}
}

func (b *body) Close() error { return b.rc.Close() }
