package resty_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgresty "github.com/headgate-go/headgate/resty"
)

// refuseFirst makes the provider refuse resty's first n attempts of every
// request with a 429 and Retry-After: 2 (a two-second pause starting as the
// attempt begins: a known pause, which nothing goes before; a Retry-After
// of one whole second is a bracket the budget's estimate may undercut).
func refuseFirst(c *resty.Client, p *quotatest.Provider, n int) {
	c.OnBeforeRequest(func(_ *resty.Client, r *resty.Request) error {
		if r.Attempt <= n {
			p.PauseFor(2 * time.Second)
		}
		return nil
	})
}

// TestNoSlotLeaks runs a real resty client through every way a call can
// end, in every body mode, and checks that the budget holds no slot
// afterwards and that no slot had to be freed by the garbage collector.
func TestNoSlotLeaks(t *testing.T) {
	cases := []struct {
		name    string
		retries int // SetRetryCount; 0 means 2 here, -1 means none
		run     func(t *testing.T, c *resty.Client, p *quotatest.Provider)
	}{
		{"default mode, retried 429s", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			refuseFirst(c, p, 2)
			resp, err := c.R().Get(api + "/v1/items")
			require.NoError(t, err)
			assert.Equal(t, 3, resp.Request.Attempt)
			assert.Equal(t, http.StatusOK, resp.StatusCode())
		}},
		{"DoNotParseResponse on the client, retried 429s", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			c.SetDoNotParseResponse(true)
			refuseFirst(c, p, 2)
			resp, err := c.R().Get(api + "/v1/items")
			require.NoError(t, err)
			assert.Equal(t, 3, resp.Request.Attempt)
			body, err := io.ReadAll(resp.RawBody())
			require.NoError(t, err)
			assert.Contains(t, string(body), "pad")
			require.NoError(t, resp.RawBody().Close())
		}},
		{"DoNotParseResponse on the request, retries exhausted on 429", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			refuseFirst(c, p, 5)
			resp, err := c.R().SetDoNotParseResponse(true).Get(api + "/v1/items")
			require.NoError(t, err)
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode())
			assert.Equal(t, 3, resp.Request.Attempt)
			require.NoError(t, resp.RawBody().Close()) // the last body is the caller's
		}},
		{"DoNotParseResponse, context cancelled during resty's wait", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			refuseFirst(c, p, 1)
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(500*time.Millisecond, cancel)
			_, err := c.R().SetContext(ctx).SetDoNotParseResponse(true).Get(api + "/v1/items")
			require.ErrorIs(t, err, context.Canceled)
		}},
		{"DoNotParseResponse, pause past the deadline", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			refuseFirst(c, p, 1)
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			_, err := c.R().SetContext(ctx).SetDoNotParseResponse(true).Get(api + "/v1/items")
			require.True(t, core.IsBudgetError(err), "err = %v", err)
		}},
		{"SetOutput, retried 429s", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			refuseFirst(c, p, 2)
			out := filepath.Join(t.TempDir(), "items.json")
			resp, err := c.R().SetOutput(out).Get(api + "/v1/items")
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode())
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Contains(t, string(got), "pad")
		}},
		{"SetOutput, the file cannot be created", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			file := filepath.Join(t.TempDir(), "file")
			require.NoError(t, os.WriteFile(file, nil, 0o600))
			_, err := c.R().SetOutput(filepath.Join(file, "sub", "items.json")).Get(api + "/v1/items")
			require.Error(t, err)
			assert.Equal(t, 1, p.Count(), "arrivals (not retried)")
		}},
		{"SetOutput, the file cannot be created, no retries", -1, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			file := filepath.Join(t.TempDir(), "file")
			require.NoError(t, os.WriteFile(file, nil, 0o600))
			_, err := c.R().SetOutput(filepath.Join(file, "sub", "items.json")).Get(api + "/v1/items")
			require.Error(t, err)
		}},
		{"SetOutput with SetResult, no retries", -1, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			var result struct{ OK bool }
			_, err := c.R().SetOutput(filepath.Join(t.TempDir(), "items.json")).SetResult(&result).Get(api + "/v1/items")
			require.Error(t, err)
		}},
		{"SetOutput with SetResult: the chain stops before the file", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			var result struct{ OK bool }
			_, err := c.R().SetOutput(filepath.Join(t.TempDir(), "items.json")).SetResult(&result).Get(api + "/v1/items")
			require.Error(t, err) // resty decodes the (unread) empty body
		}},
		{"transport errors, retries exhausted", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			p.ResetConnections(10)
			_, err := c.R().Get(api + "/v1/items")
			require.Error(t, err)
			assert.Equal(t, 3, p.Count(), "arrivals")
		}},
		{"truncated bodies, retries exhausted", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			p.SetTruncatedBody(true)
			_, err := c.R().Get(api + "/v1/items")
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Equal(t, 3, p.Count(), "arrivals")
		}},
		{"truncated bodies, DoNotParseResponse", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			p.SetTruncatedBody(true)
			resp, err := c.R().SetDoNotParseResponse(true).Get(api + "/v1/items")
			require.NoError(t, err)
			_, err = io.ReadAll(resp.RawBody())
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.NoError(t, resp.RawBody().Close())
		}},
		{"body over SetResponseBodyLimit", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			_, err := c.R().SetResponseBodyLimit(4).Get(api + "/v1/items")
			require.ErrorIs(t, err, resty.ErrResponseBodyTooLarge)
		}},
		{"OnAfterResponse error", 0, func(t *testing.T, c *resty.Client, p *quotatest.Provider) {
			c.OnAfterResponse(func(*resty.Client, *resty.Response) error { return io.ErrShortWrite })
			_, err := c.R().Get(api + "/v1/items")
			require.ErrorIs(t, err, io.ErrShortWrite)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second, BodySize: 64 << 10})
				var w leakWatch
				b := core.MustBudget(core.PerSecond(100), core.WithMaxInFlight(4), w.observer())
				retries := 2
				if tc.retries != 0 {
					retries = max(tc.retries, 0)
				}
				c := hgresty.Use(newResty(p.Transport()).SetRetryCount(retries), b)
				tc.run(t, c, p)
				w.assertNoSlots(t, b)
			})
		})
	}
}
