package core

import (
	"io"
	"net/http"
)

// observeResponse feeds a response to the permit's budget (as Observe
// does), first reading the body prefix the budget's profile asks for (ratelimit.Profile.BodyPrefix) and
// putting it back in front of the rest of the body, so the caller reads the
// body as sent. The prefix is read from the body the transport below
// returned, before the Transport wraps it, so the slot stays held until the
// caller closes or drains the body, as for any response.
//
// Reading the prefix waits for that many bytes or the end of the body.
// Profiles ask only for the short JSON bodies of refusals (and of APIs that
// refuse with a 200), never for a Server-Sent Events stream.
func (p *Permit) observeResponse(resp *http.Response) {
	if p.b == nil {
		return
	}
	var prefix []byte
	if n := p.b.cfg.profile.BodyPrefix(resp.StatusCode, resp.Header); n > 0 &&
		resp.StatusCode != http.StatusSwitchingProtocols &&
		resp.Body != nil && resp.Body != http.NoBody {
		buf := make([]byte, n)
		m, err := io.ReadAtLeast(resp.Body, buf, n)
		prefix = buf[:m]
		resp.Body = &prefixedBody{prefix: prefix, err: err, rc: resp.Body}
	}
	retry := p.key
	if retry == 0 {
		retry = anyKey // its caller may retry, under a key not known: place.go
	}
	p.b.observe(resp.StatusCode, resp.Header, prefix, p.sent, retry)
}

// prefixedBody serves a prefix already read from rc, then the rest of rc.
// err is what reading the prefix ended with: nil when rc has more, io.EOF
// or io.ErrUnexpectedEOF when the prefix is the whole body, or a read
// error, returned once the prefix is served.
type prefixedBody struct {
	prefix []byte
	err    error
	rc     io.ReadCloser
}

func (b *prefixedBody) Read(p []byte) (int, error) {
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

func (b *prefixedBody) Close() error { return b.rc.Close() }
