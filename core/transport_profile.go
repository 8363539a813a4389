package core

import (
	"net/http"

	"github.com/headgate-go/headgate/core/internal/bodyprefix"
)

// observeResponse feeds a response to the permit's budget (as Observe
// does), first reading the body prefix the budget's profile asks for
// (ratelimit.Profile.BodyPrefix) and putting it back in front of the rest
// of the body (internal/bodyprefix), so the caller reads the body as sent.
// The prefix is read from the body the transport below returned, before
// the Transport wraps it, so the slot stays held until the caller closes
// or drains the body, as for any response.
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
		prefix, resp.Body = bodyprefix.Read(resp.Body, n)
	}
	retry := p.key
	if retry == 0 {
		retry = anyKey // its caller may retry, under a key not known: place.go
	}
	p.b.observe(resp.StatusCode, resp.Header, prefix, p.sent, retry)
}
