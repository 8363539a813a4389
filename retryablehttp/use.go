package retryablehttp

import (
	"net/http"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
)

// Use makes c spend from b and returns c. It installs core's Transport,
// built with opts (core.WithLane…), on c.HTTPClient.Transport, wrapping the
// transport already there (nil means http.DefaultTransport), so that every
// attempt is paced, fed back to the budget and holds its slot until its body
// is closed. It then decorates c.Backoff with Backoff and c.CheckRetry with
// CheckRetry, both reading the pause of the budget (or lane) each request
// spent from; nil policies mean retryablehttp's defaults. (After a transport
// error Backoff has no response to find the request's lane by and reads the
// pause of b; the transport still holds the retry until its lane's pause
// ends.)
//
// c nil means retryablehttp.NewClient(). c gets its own copy of
// c.HTTPClient, so an *http.Client shared with other code (http.DefaultClient)
// is never changed; c.HTTPClient nil means retryablehttp's default pooled
// client. Call Use before c is first used, and once: it panics if c already
// sends through a core Transport spending from b, where every attempt would
// take two turns, or if b is nil (use core.Disabled() for no budget).
func Use(c *retryablehttp.Client, b *core.Budget, opts ...core.TransportOption) *retryablehttp.Client {
	mustBudget("Use", b)
	if c == nil {
		c = retryablehttp.NewClient()
	}
	var hc *http.Client
	if c.HTTPClient == nil {
		hc = cleanhttp.DefaultPooledClient()
	} else {
		copied := *c.HTTPClient
		hc = &copied
	}
	if t, ok := hc.Transport.(*core.Transport); ok && t.Budget() == b {
		panic("hgretry: Use: the client already sends through a transport on this budget (every attempt would take two turns)")
	}
	t := core.NewTransport(hc.Transport, b, opts...)
	hc.Transport = t
	c.HTTPClient = hc
	c.Backoff = backoff(t.BudgetFor, c.Backoff)
	c.CheckRetry = checkRetry(t.BudgetFor, c.CheckRetry)
	return c
}
