package ratelimit

import (
	"net/http"
	"time"
)

// The built-in profiles, each a Spec and, where no Spec says it, code (a
// hook). The documented behaviour each one follows is cited beside its
// cases in profiles_test.go and profiles_more_test.go.
var (
	// GitHub adds GitHub's secondary rate limits: a 403 or 429 whose body
	// names one, with no wait named, waits one minute.
	GitHub = builtin(Spec{Name: "github", BodyBytes: 512, Signals: []Signal{
		{Statuses: []int{http.StatusForbidden, http.StatusTooManyRequests},
			Contains: []string{"secondary rate limit"}, DefaultWait: time.Minute},
	}}, hookNone)

	// Atlassian adds Jira's and Confluence's Beta-RateLimit fields.
	Atlassian = builtin(Spec{Name: "atlassian"}, hookAtlassian)

	// HubSpot adds the X-HubSpot-RateLimit-* windows: a rolling interval
	// (-Max, -Remaining, -Interval-Milliseconds), a rolling second
	// (-Secondly, -Secondly-Remaining) and a daily quota (-Daily,
	// -Daily-Remaining) that turns at the account's midnight, so its reset
	// is unknown.
	HubSpot = builtin(Spec{Name: "hubspot", Quotas: []QuotaSpec{
		{Name: "interval", Limit: "X-HubSpot-RateLimit-Max", Remaining: "X-HubSpot-RateLimit-Remaining",
			WindowHeader: "X-HubSpot-RateLimit-Interval-Milliseconds", WindowEncoding: EncodingMilliseconds, Rolling: true},
		{Name: "secondly", Limit: "X-HubSpot-RateLimit-Secondly", Remaining: "X-HubSpot-RateLimit-Secondly-Remaining",
			Window: time.Second, Rolling: true},
		{Name: "daily", Limit: "X-HubSpot-RateLimit-Daily", Remaining: "X-HubSpot-RateLimit-Daily-Remaining"},
	}}, hookNone)

	// Zendesk adds the Zendesk-RateLimit-<endpoint> quotas.
	Zendesk = builtin(Spec{Name: "zendesk"}, hookZendesk)

	// Bybit adds X-Bapi-Limit-Status (what remains of X-Bapi-Limit, per
	// second) and X-Bapi-Limit-Reset-Timestamp (Unix milliseconds); a 200
	// whose body carries retCode 10006 ("Too many visits!") or 10018 (the
	// IP's limit) is a refusal until the reset (else one second); a 403
	// "access too frequent" bans the IP for at least ten minutes.
	Bybit = builtin(Spec{Name: "bybit", BodyBytes: 256,
		Quotas: []QuotaSpec{{Limit: "X-Bapi-Limit", Remaining: "X-Bapi-Limit-Status",
			Reset: "X-Bapi-Limit-Reset-Timestamp", ResetEncoding: EncodingUnixMilli, Window: time.Second}},
		Signals: []Signal{
			{Statuses: []int{http.StatusForbidden}, Contains: []string{"too frequent"}, MinWait: 10 * time.Minute},
			{Statuses: []int{http.StatusOK}, Field: "retCode", Values: []string{"10006", "10018"},
				UntilReset: true, DefaultWait: time.Second},
		}}, hookNone)

	// Shopify adds the GraphQL Admin API's throttle status.
	Shopify = builtin(Spec{Name: "shopify"}, hookShopify, http.StatusOK, http.StatusTooManyRequests)

	// Salesforce adds the REQUEST_LIMIT_EXCEEDED refusal: a 403 past the
	// 24-hour allocation, which names no wait.
	Salesforce = builtin(Spec{Name: "salesforce", BodyBytes: 512, Signals: []Signal{
		{Statuses: []int{http.StatusForbidden}, Contains: []string{"REQUEST_LIMIT_EXCEEDED"}},
	}}, hookNone)

	// Discord adds the rate limit's scope and the body's retry_after
	// (seconds, decimals allowed), the pause when no header gave one.
	Discord = builtin(Spec{Name: "discord", BodyBytes: 512, Signals: []Signal{
		{Statuses: []int{http.StatusTooManyRequests}, Wait: "retry_after", WaitEncoding: EncodingSeconds},
	}}, hookDiscord)

	// OpenAI adds the body's "try again in" and insufficient_quota.
	OpenAI = builtin(Spec{Name: "openai"}, hookOpenAI, http.StatusTooManyRequests)

	// Anthropic adds the Priority Tier quotas,
	// anthropic-priority-{input,output}-tokens-{limit,remaining,reset}.
	Anthropic = builtin(Spec{Name: "anthropic", Quotas: []QuotaSpec{
		{Name: "priority-input-tokens", Unit: "tokens", Limit: "Anthropic-Priority-Input-Tokens-Limit",
			Remaining: "Anthropic-Priority-Input-Tokens-Remaining", Reset: "Anthropic-Priority-Input-Tokens-Reset"},
		{Name: "priority-output-tokens", Unit: "tokens", Limit: "Anthropic-Priority-Output-Tokens-Limit",
			Remaining: "Anthropic-Priority-Output-Tokens-Remaining", Reset: "Anthropic-Priority-Output-Tokens-Reset"},
	}}, hookNone)

	// GoogleMaps adds the OVER_QUERY_LIMIT status of a 200's body: a
	// refusal that names no wait.
	GoogleMaps = builtin(Spec{Name: "googlemaps", BodyBytes: 512, Signals: []Signal{
		{Statuses: []int{http.StatusOK}, Field: "status", Values: []string{"OVER_QUERY_LIMIT"}},
	}}, hookNone)

	// Prisjakt reads X-Rate-Limit-Reset as milliseconds from now.
	Prisjakt = builtin(Spec{Name: "prisjakt"}, hookPrisjakt)

	// Telegram adds the Bot API's flood control: a 429 whose JSON body
	// names the wait in parameters.retry_after (seconds).
	Telegram = builtin(Spec{Name: "telegram", BodyBytes: 512, Signals: []Signal{
		{Statuses: []int{http.StatusTooManyRequests}, Wait: "retry_after", WaitEncoding: EncodingSeconds},
	}}, hookNone)

	// Google adds Google APIs' refusals: a 429 RESOURCE_EXHAUSTED whose
	// google.rpc.RetryInfo names the wait in retryDelay ("22s", the Gemini
	// API), and a 403 whose error reason is rateLimitExceeded,
	// userRateLimitExceeded, dailyLimitExceeded or quotaExceeded (Drive,
	// Calendar, YouTube), which names none.
	Google = builtin(Spec{Name: "google", BodyBytes: profileMaxBody, Signals: []Signal{
		{Statuses: []int{http.StatusTooManyRequests}, Wait: "retryDelay", WaitEncoding: EncodingDuration},
		{Statuses: []int{http.StatusForbidden}, Field: "reason",
			Values: []string{"rateLimitExceeded", "userRateLimitExceeded", "dailyLimitExceeded", "quotaExceeded"}},
	}}, hookNone)

	// AWS adds the throttling errors of AWS APIs, which refuse with a 400
	// (DynamoDB, most JSON APIs), a 403 or a 503 whose body names the
	// error: ThrottlingException, Throttling, TooManyRequestsException,
	// ProvisionedThroughputExceededException, RequestLimitExceeded,
	// RequestThrottled, SlowDown. None names a wait.
	AWS = builtin(Spec{Name: "aws", BodyBytes: 512, Signals: []Signal{
		{Statuses: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
			Contains: []string{"Throttling", "TooManyRequestsException", "ProvisionedThroughputExceeded",
				"RequestLimitExceeded", "RequestThrottled", "SlowDown"}},
	}}, hookNone)
)

// builtin compiles a built-in profile; bodyStatuses are the statuses whose
// body its hook reads, beside those its signals name.
func builtin(s Spec, h hook, bodyStatuses ...int) Profile {
	p, err := compileSpec(s, h)
	if err != nil {
		panic(err) // a built-in spec out of bounds: a bug caught by every test run
	}
	for _, st := range bodyStatuses {
		if !containsInt(p.statuses, st) {
			p.statuses = append(p.statuses, st)
		}
	}
	return Profile{p}
}

// hook names the code of a built-in profile for what no Spec says. User
// profiles have none. The code is called through switches rather than
// function values so that the quotas and the feedback it writes to stay on
// the stack: with or without a profile, a response with nothing to read
// allocates nothing.
type hook uint8

const (
	hookNone hook = iota
	hookAtlassian
	hookZendesk
	hookShopify
	hookDiscord
	hookOpenAI
	hookPrisjakt
)

// hookQuotas adds to qs the quotas p's code reads.
func (p *profile) hookQuotas(h http.Header, now time.Time, qs *feedbackQuotas) Source {
	switch p.hook {
	case hookAtlassian:
		return quotasAtlassian(h, qs)
	case hookZendesk:
		return quotasZendesk(h, qs)
	}
	return FromNone
}

// hookRefine adjusts fb as p's code reads the response.
func (p *profile) hookRefine(status int, h http.Header, body []byte, now time.Time, fb *Feedback) {
	switch p.hook {
	case hookShopify:
		refineShopify(body, fb)
	case hookDiscord:
		refineDiscord(status, h, fb)
	case hookOpenAI:
		refineOpenAI(status, body, fb)
	case hookPrisjakt:
		refinePrisjakt(h, fb)
	}
}
