package quotatest

import (
	"net/http"
	"strconv"
	"time"
)

// TokensHeader is the request header that says how many tokens a request uses in token
// mode (Config.Tokens): the usage the fake provider charges and reports back, standing for
// the prompt and completion of a real LLM call. A missing or invalid value counts 0.
const TokensHeader = "X-Test-Tokens"

// Token-mode response headers, as OpenAI spells them.
const (
	hdrXLimitTokens     = "X-Ratelimit-Limit-Tokens"
	hdrXRemainingTokens = "X-Ratelimit-Remaining-Tokens"
	hdrXResetTokens     = "X-Ratelimit-Reset-Tokens"
)

// tokenLimiter is the token limit of token mode: GCRA in units, where a request of n
// tokens is admitted when the bucket holds n (its level is at most capacity-n), and
// spends n. Like limiter, it is a pure function of the instants it is given.
type tokenLimiter struct {
	capacity int           // TokenBurst
	interval time.Duration // Period/Tokens: the time one token takes to return
	tat      time.Time     // zero: idle, a full bucket
}

func newTokenLimiter(cfg Config) tokenLimiter {
	if cfg.Tokens <= 0 {
		return tokenLimiter{}
	}
	return tokenLimiter{capacity: cfg.TokenBurst, interval: cfg.Period / time.Duration(cfg.Tokens)}
}

func (l *tokenLimiter) base(now time.Time) time.Time {
	if l.tat.After(now) {
		return l.tat
	}
	return now
}

// check reports whether n tokens fit at now, and if not how long until they do. A request
// of more than the capacity never fits; it is told the time until the bucket is full.
func (l *tokenLimiter) check(now time.Time, n int) (ok bool, wait time.Duration) {
	ahead := l.base(now).Sub(now) // what the bucket lacks, in time
	free := time.Duration(l.capacity-min(n, l.capacity)) * l.interval
	if ahead <= free {
		return n <= l.capacity, max(ahead, time.Nanosecond)
	}
	return false, ahead - free
}

// spend takes n tokens at now; check said they fit.
func (l *tokenLimiter) spend(now time.Time, n int) {
	l.tat = l.base(now).Add(time.Duration(n) * l.interval)
}

// state reports how many tokens the bucket holds at now and how long until it is full.
func (l *tokenLimiter) state(now time.Time) (remaining int, reset time.Duration) {
	ahead := l.base(now).Sub(now)
	return l.capacity - int(min(int64(l.capacity), int64((ahead+l.interval-1)/l.interval))), ahead
}

// requestTokens reads TokensHeader.
func requestTokens(r *http.Request) int {
	n, err := strconv.Atoi(r.Header.Get(TokensHeader))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// usageBody is the body of an admitted request in token mode, shaped like an OpenAI chat
// completion's usage.
func usageBody(n int) []byte {
	return []byte(`{"object":"chat.completion","usage":{"total_tokens":` + strconv.Itoa(n) + "}}\n")
}

// writeTokenHeaders sets the OpenAI-style token headers (the reset as a Go duration, as
// OpenAI sends it, rounded up to the millisecond).
func writeTokenHeaders(h http.Header, r report) {
	h.Set(hdrXLimitTokens, strconv.Itoa(r.tokLimit))
	h.Set(hdrXRemainingTokens, strconv.Itoa(r.tokRemaining))
	h.Set(hdrXResetTokens, (time.Duration(ceilDiv(r.tokReset, time.Millisecond)) * time.Millisecond).String())
}
