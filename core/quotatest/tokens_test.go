package quotatest_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// fetchTokens sends a request that uses n tokens and reads the response.
func fetchTokens(t *testing.T, c *http.Client, n int) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://quota.test/v1/chat/completions", nil)
	req.Header.Set(quotatest.TokensHeader, strconv.Itoa(n))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func TestTokenModeEnforcesTokensAndReportsUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1000 requests/s never binds; 100 tokens/s with a burst of 100 does.
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1000, Period: time.Second, Tokens: 100,
			Headers: quotatest.RetryAfterMillis | quotatest.XRateLimitDelta})
		c := p.Client()
		steps := []struct {
			sleep     time.Duration
			tokens    int
			status    int
			remaining string // x-ratelimit-remaining-tokens
			retryMs   string // retry-after-ms, "" when absent
		}{
			{0, 60, 200, "40", ""},
			{0, 60, 429, "40", "200"},                  // 20 tokens short: 200 ms
			{200 * time.Millisecond, 60, 200, "0", ""}, // now they fit
			{0, 1, 429, "0", "10"},                     // empty: one token takes 10 ms
			{10 * time.Second, 101, 429, "100", "1"},   // above the burst: never fits
			{0, 100, 200, "0", ""},
		}
		for i, s := range steps {
			time.Sleep(s.sleep)
			r := fetchTokens(t, c, s.tokens)
			if r.status != s.status {
				t.Fatalf("step %d: %d tokens at t0+%v: status %d, want %d", i, s.tokens, time.Since(t0), r.status, s.status)
			}
			if got := r.header.Get("X-Ratelimit-Remaining-Tokens"); got != s.remaining {
				t.Errorf("step %d: x-ratelimit-remaining-tokens = %q, want %q", i, got, s.remaining)
			}
			if got := r.header.Get("Retry-After-Ms"); got != s.retryMs && s.status == 429 && s.tokens <= 100 {
				t.Errorf("step %d: retry-after-ms = %q, want %q", i, got, s.retryMs)
			}
			if s.status == 200 {
				want := `{"object":"chat.completion","usage":{"total_tokens":` + strconv.Itoa(s.tokens) + "}}\n"
				if r.body != want {
					t.Errorf("step %d: body %q, want %q", i, r.body, want)
				}
			}
		}
		var charged int
		for _, a := range p.Arrivals() {
			charged += a.Tokens
		}
		if charged != 220 {
			t.Errorf("tokens charged = %d, want 220", charged)
		}
	})
}

func TestTokenModeConfigErrors(t *testing.T) {
	for _, cfg := range []quotatest.Config{
		{Requests: 1, Period: time.Second, Tokens: -1},
		{Requests: 1, Period: time.Second, TokenBurst: 5},
		{Requests: 1, Period: time.Second, Tokens: 5, Algorithm: quotatest.FixedWindow},
	} {
		if _, err := quotatest.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error, want one", cfg)
		}
	}
}
