// Package ratelimit reads what an HTTP response says about the rate limit it
// was counted against: how long to pause, whether the quota is spent, and
// what is left of it. It needs nothing but the standard library and knows
// nothing of a budget: [Parse] is a pure function of a response's status, its
// header and the instant it arrived, so any client, proxy or test may read
// rate-limit headers with it. headgate's budget (package core) applies what
// it reads.
//
// # Quick start
//
//	resp, err := http.DefaultClient.Do(req)
//	if err != nil {
//		return err
//	}
//	fb := ratelimit.Parse(resp.StatusCode, resp.Header, time.Now())
//	if fb.Exhausted {
//		time.Sleep(min(fb.Pause, time.Minute)) // cap what you obey
//	}
//
// A [Profile] reads what one provider says beyond the generic headers (its
// own header names, signals in the body): ratelimit.GitHub.Parse(status, h,
// body, now), where body is the first [Profile.BodyPrefix] bytes of the body.
//
// # What it reads
//
// The pause comes from the first of three levels that applies:
//
//  1. On any error status (4xx, 5xx), the retry headers: retry-after-ms,
//     then x-ms-retry-after-ms, then Retry-After (delta-seconds, decimals
//     allowed, or an HTTP-date in any RFC 9110 form, read leniently). A
//     header sent on several lines gives its longest valid wait. A 418 ban
//     or a 529 overload that names a wait asked for it.
//  2. The IETF RateLimit and RateLimit-Policy structured fields, their
//     draft-07 dictionary, and the RateLimit-Limit, -Remaining and -Reset
//     trio: a spent requests item pauses until its reset. Quotas in other
//     units (qu="content-bytes") are listed in Feedback.Quotas in their own
//     unit and never pause.
//  3. Only when level 2 is absent or unusable, the de facto headers:
//     X-RateLimit-Limit, -Remaining, -Reset, -Reset-After, -Used and
//     -Resource, X-Rate-Limit-* and a bare X-Rate-Limit; OpenAI's and
//     Azure's x-ratelimit-{limit,remaining,reset}-{requests,tokens};
//     Anthropic's anthropic-ratelimit-*; Shopify's
//     X-Shopify-Shop-Api-Call-Limit and Salesforce's Sforce-Limit-Info
//     (used/limit); and every other header whose name holds "ratelimit" or
//     "rate-limit", read by family (below). A spent quota pauses until its
//     reset; a reset is read as seconds (decimals allowed: 11.38), Unix
//     seconds or Unix milliseconds, told apart by size against now (below
//     half of now's Unix time is seconds from now, below 500 times it Unix
//     seconds, anything larger Unix milliseconds), a Go duration (6m0s,
//     1m30s) or a date.
//
// # Families
//
// A header name not listed above is read by its parts: the family (up to and
// including "ratelimit-" or "rate-limit-": x-ratelimit-,
// x-sentry-rate-limit-, gw-ratelimit-), one field, an optional dimension and
// an optional window, the last three in any order:
// x-ratelimit-limit-requests-day, x-ratelimit-reset-tokens-per-minute,
// x-ratelimit-complexity-remaining, x-ratelimit-minute-limit. The fields are
// limit (max, quota, total), remaining (remain, left), used (usage: the
// remaining count is the limit less it), reset (any form above), reset-after
// and retry-after (seconds from now), reset-ms (milliseconds from now), and
// window, interval or period (the window's length, in seconds, or
// milliseconds with -ms). A window word (second, minute, hour, day, week,
// with or without "per", or a count such as 24hour) gives the quota's Window;
// the words left name the dimension: its quota's name, and its unit (tokens,
// concurrent-requests for a concurrency limit, a cost unit such as
// complexity or points, else requests). A vendor's bare family name
// (X-Discogs-Ratelimit) and a window alone (X-HubSpot-RateLimit-Secondly)
// are limits. Headers of one family, dimension and window make one quota; a
// family's headers with neither lend their reset and window to its
// dimensions. A limit listing several windows (600,30000) with as many
// remaining or used counts is one quota per window. A concurrency quota at 0
// binds and has no reset. A name with no field, two fields or a split
// dimension says no quota, and no quota is reported without a remaining
// count.
//
// Levels 2 and 3 fill Remaining, Limit, Reset and Quotas whatever decided the
// pause. An invalid value counts as absent; counts may be decimals; a
// remaining count sent twice, or folded into a list ("991, 98"), reads as
// the smallest. Header names match in any case, even in a map built by hand.
//
// # The binding quota
//
// A response may report several quotas (requests and tokens, a burst and a
// daily policy). Feedback.Remaining, Limit and Reset describe the binding
// one, chosen among the quotas whose remaining count is known (of the IETF
// ones, those counting requests): a spent quota (between two spent ones, the
// one that resets last), else the one with the smallest remaining fraction
// of its limit, else the smallest remaining count; ties go to the earlier
// header. The pause of a spent level-2 or level-3 quota is the longest reset
// among the spent ones. Feedback.Quotas lists every quota reported.
//
// A 429 is always Exhausted; so is a 503 unless its retry header does not
// parse (an outage page, not a quota), any error status with a valid retry
// header, and a 403 with a spent quota (GitHub's limits). The pause is never negative and never
// capped: a caller caps what it obeys.
//
// # Profiles
//
// A profile adds to the generic reading, never replaces it, and reads a body
// only for the responses it names, at most a 4 KiB prefix (on a 2xx only
// when it is JSON), never a text/event-stream. A profile is a [Spec]: quotas
// under the API's own header names with their encodings, signals in the
// body (a text or a JSON member's value that marks a refusal, a JSON member
// that names the wait), statuses that always refuse. [NewProfile] builds one
// written in Go, [LoadProfile] one written in JSON; core.WithProfile takes
// either, as it takes the built-in ones, which are Specs too (with code where
// no Spec says it):
//
//   - [GitHub]: a 403 or 429 whose body names a secondary rate limit, with
//     quota left and no retry header, waits one minute.
//   - [Atlassian]: Jira's and Confluence's Beta-RateLimit and
//     Beta-RateLimit-Policy (IETF syntax).
//   - [HubSpot]: X-HubSpot-RateLimit-Max, -Remaining and
//     -Interval-Milliseconds, and the -Secondly and -Daily quotas.
//   - [Zendesk]: Zendesk-RateLimit-<endpoint>: total=100; remaining=99;
//     resets=41.
//   - [Bybit]: X-Bapi-Limit-Status, -Limit and -Reset-Timestamp; retCode
//     10006 or 10018 in a 200 is a refusal; a 403 "access too frequent"
//     waits ten minutes.
//   - [Shopify]: a GraphQL THROTTLED answer waits until the bucket holds the
//     query's cost.
//   - [Salesforce]: a 403 REQUEST_LIMIT_EXCEEDED is a refusal.
//   - [Discord]: a 429's scope (user, global, shared) as a spent quota; the
//     body's retry_after when no header gave a pause.
//   - [OpenAI]: "Please try again in 1.8s" in a 429's body;
//     insufficient_quota is a refusal no wait restores.
//   - [Anthropic]: the Priority Tier anthropic-priority-*-tokens-* quotas.
//   - [GoogleMaps]: "status": "OVER_QUERY_LIMIT" in a 200's body is a
//     refusal.
//   - [Prisjakt]: X-Rate-Limit-Reset in milliseconds from now.
//   - [Telegram]: a 429's parameters.retry_after.
//   - [Google]: a 429's RetryInfo retryDelay (Gemini); a 403 whose reason is
//     rateLimitExceeded, userRateLimitExceeded, dailyLimitExceeded or
//     quotaExceeded.
//   - [AWS]: a 400, 403, 429 or 503 naming a throttling error
//     (ThrottlingException, ProvisionedThroughputExceededException…).
//
// The zero Profile, [NoProfile], is the generic reading alone.
package ratelimit
