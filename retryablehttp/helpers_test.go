package retryablehttp_test

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
)

// The URL of the in-process provider: quotatest's Transport ignores the host.
const api = "http://api.example"

// newClient returns a retryablehttp client, silent, that sends through rt
// and spends from b.
func newClient(rt http.RoundTripper, b *core.Budget, opts ...core.TransportOption) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.HTTPClient.Transport = rt
	return hgretry.Use(c, b, opts...)
}

// get sends a GET with ctx, reads and closes the body and returns the
// status and the error of Do or of reading the body.
func get(ctx context.Context, c *retryablehttp.Client, url string) (int, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// arrival is one request the provider saw, at an offset from t0.
type arrival struct {
	At      time.Duration
	Path    string
	Outcome quotatest.Outcome
	Status  int
}

func arrivals(p *quotatest.Provider, t0 time.Time) []arrival {
	var out []arrival
	for _, a := range p.Arrivals() {
		out = append(out, arrival{At: a.At.Sub(t0), Path: a.Path, Outcome: a.Outcome, Status: a.Status})
	}
	return out
}

// reformatRetryAfter rewrites the Retry-After date of every response into
// another RFC 9110 form, as a provider sending that form would: the instant
// is the same. It sits between the budget's transport and the provider.
type reformatRetryAfter struct {
	next   http.RoundTripper
	format func(time.Time) string
}

func (r reformatRetryAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if v := resp.Header.Get("Retry-After"); v != "" {
		if at, perr := http.ParseTime(v); perr == nil {
			resp.Header.Set("Retry-After", r.format(at.UTC()))
		}
	}
	return resp, nil
}

// setRetryAfter replaces the Retry-After of every refusal with a fixed value.
type setRetryAfter struct {
	next  http.RoundTripper
	value string
}

func (s setRetryAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.Header.Get("Retry-After") != "" {
		resp.Header.Set("Retry-After", s.value)
	}
	return resp, nil
}

// The Retry-After forms of RFC 9110, section 10.2.3 (and 5.6.7 for dates).
var (
	imfFixdate = func(t time.Time) string { return t.Format(http.TimeFormat) }
	rfc850     = func(t time.Time) string { return t.Format("Monday, 02-Jan-06 15:04:05 GMT") }
	asctime    = func(t time.Time) string { return t.Format(time.ANSIC) }
)
