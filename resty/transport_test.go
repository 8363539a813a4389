package resty_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	hgresty "github.com/headgate-go/headgate/resty"
)

// TestUseKeepsTransportSettings: Use wraps the transport the client has, so
// TLS and proxy settings made before Use still apply, and the budget sees
// the requests.
func TestUseKeepsTransportSettings(t *testing.T) {
	t.Run("proxy", func(t *testing.T) {
		// The quotatest server plays the proxy: it gets the absolute-form
		// request for a host that does not resolve.
		proxy, err := quotatest.NewServer(quotatest.Config{Requests: 10, Period: time.Second})
		require.NoError(t, err)
		t.Cleanup(proxy.Close)
		b := core.MustBudget(core.PerSecond(10))
		c := hgresty.Use(resty.New().SetLogger(quietLogger{}).SetProxy(proxy.URL), b)
		resp, err := c.R().Get("http://api.example.invalid/v1/items")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode())
		assert.Equal(t, 1, proxy.Count(), "requests through the proxy")

		proxy.PauseFor(5 * time.Second) // whole seconds past 1: a known wait
		_, err = c.R().Get("http://api.example.invalid/v1/items")
		require.NoError(t, err)
		assert.Positive(t, b.PauseRemaining(), "the budget read the response")
	})
	t.Run("TLS", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		var w leakWatch
		b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(1), w.observer())
		c := hgresty.Use(resty.New().SetLogger(quietLogger{}).SetTLSClientConfig(&tls.Config{RootCAs: pool}), b)
		resp, err := c.R().Get(srv.URL)
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode())
		w.assertNoSlots(t, b)
	})
}
