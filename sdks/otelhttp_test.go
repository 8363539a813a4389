package sdks_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

// TestCommitBehindOtelhttp: core.Commit finds the request's cost through
// its context when otelhttp, above headgate, wraps the response body and
// http.Client.Timeout wraps it again. The 70 tokens given back let the next
// 100-token call go at 0.3 s instead of 1 s.
func TestCommitBehindOtelhttp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := quotatest.New(quotatest.Config{Requests: 1000, Period: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		b := core.MustBudget(core.PerSecond(1000), core.WithDimension("tokens", core.PerSecond(100)))
		c := &http.Client{Transport: otelhttp.NewTransport(core.NewTransport(p.Transport(), b)), Timeout: time.Hour}
		start := time.Now()
		call := func(commit bool) time.Duration {
			ctx := core.WithCost(context.Background(), core.Cost{Dimension: "tokens", Amount: 100})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/v1/chat/completions", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			sent := time.Since(start)
			io.Copy(io.Discard, resp.Body)
			if commit && !core.Commit(resp, core.Cost{Dimension: "tokens", Amount: 30}) {
				t.Error("Commit behind otelhttp = false, want true")
			}
			resp.Body.Close()
			return sent
		}
		call(true)
		if got := call(false); got != 300*time.Millisecond {
			t.Errorf("second call sent at %v, want 300ms", got)
		}
	})
}
