package fake

import (
	"net/http"
	"strconv"

	"github.com/headgate-go/headgate/core/quotatest"
)

// GitHub returns a provider of GitHub's REST API enforcing cfg's requests
// per period in fixed windows, as GitHub's primary limit does, with its
// headers: x-ratelimit-limit, -remaining, -used, -reset (Unix seconds) and
// -resource on every response. Over the limit it refuses with 403 and
// x-ratelimit-remaining: 0; during a pause (PauseFor), with GitHub's
// secondary limit: 403, retry-after and no primary headers. Each refusal
// has GitHub's message and documentation_url, which go-github reads to tell
// a RateLimitError from an AbuseRateLimitError. An admitted call gets a
// repository.
func GitHub(cfg quotatest.Config) (*API, error) {
	cfg.Algorithm = quotatest.FixedWindow
	cfg.Status = http.StatusForbidden
	cfg.Headers = quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds
	cfg.Body = []byte(`{"id":1296269,"name":"Hello-World","full_name":"octocat/Hello-World","private":false}`)
	p, err := quotatest.New(cfg)
	if err != nil {
		return nil, err
	}
	return &API{Provider: p, rewrite: func(resp *http.Response, refusal string) {
		h := resp.Header
		switch refusal {
		case "paused":
			for _, k := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
				h.Del(k)
			}
			setBody(resp, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",`+
				`"documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`)
			return
		case "":
		default:
			h.Del("Retry-After") // the primary limit says when it resets, not when to retry
			setBody(resp, `{"message":"API rate limit exceeded for user ID 1.",`+
				`"documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit"}`)
		}
		limit, _ := strconv.Atoi(h.Get("X-Ratelimit-Limit"))
		remaining, _ := strconv.Atoi(h.Get("X-Ratelimit-Remaining"))
		h.Set("X-Ratelimit-Used", strconv.Itoa(limit-remaining))
		h.Set("X-Ratelimit-Resource", "core")
	}}, nil
}

// Stripe returns a provider of Stripe's API enforcing cfg's requests per
// period. Like Stripe, it sends no rate-limit headers: over the limit (or
// during a pause) it answers 429 with Stripe's rate_limit error, which
// stripe-go does not retry. An admitted call gets a customer.
func Stripe(cfg quotatest.Config) (*API, error) {
	cfg.Status = http.StatusTooManyRequests
	cfg.Headers = quotatest.NoHeaders
	cfg.Body = []byte(`{"id":"cus_NffrFeUfNV2Hib","object":"customer","email":"jenny.rosen@example.com","livemode":false}`)
	p, err := quotatest.New(cfg)
	if err != nil {
		return nil, err
	}
	return &API{Provider: p, rewrite: func(resp *http.Response, refusal string) {
		resp.Header.Set("Request-Id", "req_fake")
		if refusal != "" {
			setBody(resp, `{"error":{"code":"rate_limit","doc_url":"https://stripe.com/docs/error-codes/rate-limit",`+
				`"message":"Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.","type":"invalid_request_error"}}`)
		}
	}}, nil
}
