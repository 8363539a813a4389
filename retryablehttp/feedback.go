package retryablehttp

import (
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core"
)

// serverWait returns the wait a response asks for itself, read exactly as a
// budget reads it (core.ParseFeedback: retry-after-ms, Retry-After in every
// RFC 9110 form, the IETF and de facto rate-limit fields), capped at the
// budget's MaxPause; 0 for none.
func serverWait(b *core.Budget, resp *http.Response) time.Duration {
	return min(core.ParseFeedback(resp.StatusCode, resp.Header, time.Now()).Pause, b.MaxPause())
}

// withoutRetryAfter returns resp, or a copy of it without the Retry-After
// header when it has one, so that a backoff it is passed to cannot read that
// header with a parser of its own (retryablehttp's reads neither RFC 850 nor
// asctime dates and caps nothing).
func withoutRetryAfter(resp *http.Response) *http.Response {
	if resp == nil || len(resp.Header.Values("Retry-After")) == 0 {
		return resp
	}
	r := *resp
	r.Header = resp.Header.Clone()
	r.Header.Del("Retry-After")
	return &r
}
