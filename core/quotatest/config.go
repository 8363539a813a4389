package quotatest

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"strings"
	"time"
)

// Algorithm is the way a Provider enforces its limit.
// The zero value is GCRA.
type Algorithm int

const (
	// GCRA is the generic cell rate algorithm (a token bucket in virtual scheduling form):
	// up to Burst requests may arrive back to back, and after that one per Period/Requests.
	// It is the default, and the algorithm headgate's budget paces with.
	GCRA Algorithm = iota
	// FixedWindow admits Requests requests in each window of length Period. Windows are
	// aligned: they start at multiples of Period since the zero time, so per-second,
	// per-minute and per-hour windows start on the UTC second, minute and hour.
	FixedWindow
	// SlidingWindow is the sliding-window counter of go-chi/httprate and fiber's sliding
	// limiter: windows aligned as FixedWindow's, and a request admitted while
	// prev×(1−e/Period) + current, counting it, is at most Requests, where prev and current
	// are what the previous and the current window admitted and e is how far into the
	// current window it is. From idle Requests may go back to back; the quota returns
	// gradually, as the previous window's weight falls.
	SlidingWindow
	// TokenBucket is a bucket of Burst tokens that refills continuously, Requests tokens
	// per Period; a request takes one token, and is refused while the bucket holds less
	// than one. It keeps the bucket's level where GCRA keeps the time it will be full:
	// the two admit the same requests (up to GCRA's interval, Period/Requests truncated
	// to the nanosecond) and report the same numbers. Its arithmetic is exact: Burst ×
	// Period must fit in an int64.
	TokenBucket
	// SlidingLog keeps the instant of every admitted request and admits one while fewer
	// than Requests were admitted in the Period before it: a request admitted at t
	// counts until t + Period. It is the exact sliding window that SlidingWindow
	// estimates; it holds up to Requests instants.
	SlidingLog
	// FirstRequestWindow admits Requests requests in each window of length Period, as
	// FixedWindow does, but a window starts at the first request after the previous one
	// ended (fiber's limiter, and counters whose expiry the first hit sets), not on the
	// clock: an idle provider's next request opens a new window.
	FirstRequestWindow
)

var algorithmNames = [...]string{"GCRA", "FixedWindow", "SlidingWindow", "TokenBucket", "SlidingLog", "FirstRequestWindow"}

// String returns the algorithm's name, e.g. "GCRA" or "SlidingLog".
func (a Algorithm) String() string {
	if a >= 0 && int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// windowed reports whether a counts requests in windows of Period (no Burst).
func (a Algorithm) windowed() bool {
	return a == FixedWindow || a == SlidingWindow || a == SlidingLog || a == FirstRequestWindow
}

// HeaderStyle selects the rate-limit headers a Provider sends. Styles are bits and may be
// combined with |, as real providers do (GitHub sends X-RateLimit-* with a Unix reset and,
// for some refusals, Retry-After: XRateLimitEpoch|RetryAfterSeconds).
// The zero value means RetryAfterSeconds.
//
// Which responses carry what:
//   - RetryAfterSeconds, RetryAfterDate, RetryAfterMillis appear on rate and pause refusals
//     only, and say how long until a request would be admitted.
//   - IETF, XRateLimitDelta, XRateLimitEpoch appear on every response, admitted or refused,
//     and report the limit, what remains and when it resets (see Provider for the numbers).
//   - Refusals for MaxConcurrent carry no Retry-After of any kind (no time can be promised:
//     a slot frees when a response ends); the informational styles still report the rate.
//
// Rounding: by default every duration is rounded up, never down, so a client that waits
// what a header says is never early: Retry-After, IETF t and the X-RateLimit-Reset delta are
// whole seconds rounded up; retry-after-ms is milliseconds rounded up; the IMF-fixdates and
// the X-RateLimit-Reset epochs are the instant rounded up to the next whole second (the next
// millisecond for XRateLimitEpochMillis). ResetRoundedDown and ResetRoundedNearest round the
// quota's reset (IETF t, X-RateLimit-Reset in any form) down or to the nearest unit instead,
// as servers do that write time.Unix() or round their seconds; Retry-After stays rounded up.
type HeaderStyle uint

const (
	// RetryAfterSeconds sends Retry-After as delta-seconds, e.g. "Retry-After: 1".
	RetryAfterSeconds HeaderStyle = 1 << iota
	// RetryAfterDate sends Retry-After as an IMF-fixdate (http.TimeFormat), e.g.
	// "Retry-After: Sat, 01 Jan 2000 00:00:03 GMT". It cannot be combined with RetryAfterSeconds.
	RetryAfterDate
	// RetryAfterMillis sends "retry-after-ms: 1500", the millisecond form some LLM APIs send.
	// Combine it with RetryAfterSeconds to send both, as those APIs do.
	RetryAfterMillis
	// IETF sends the IETF draft structured fields on every response:
	// `RateLimit-Policy: "default";q=100;w=60` and `RateLimit: "default";r=0;t=12`.
	IETF
	// XRateLimitDelta sends X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
	// on every response, the reset in seconds from now.
	XRateLimitDelta
	// XRateLimitEpoch is XRateLimitDelta with X-RateLimit-Reset as a Unix time in seconds.
	// It cannot be combined with XRateLimitDelta.
	XRateLimitEpoch
	// NoHeaders sends no rate-limit headers at all: a bare status. It cannot be combined.
	NoHeaders
	// ResetRoundedDown is a modifier of IETF and the X-RateLimit styles: the reset they
	// report (IETF t, X-RateLimit-Reset in any form) is rounded down to a whole second (a
	// millisecond for XRateLimitEpochMillis), as GitHub-style servers that write time.Unix()
	// send it, so "0" or the current second can mean up to a second still to wait. It needs
	// one of those styles.
	ResetRoundedDown
	// XRateLimitEpochMillis is XRateLimitDelta with X-RateLimit-Reset as a Unix time in
	// milliseconds, e.g. "946684803250". It cannot be combined with another X-RateLimit-Reset form.
	XRateLimitEpochMillis
	// XRateLimitDate is XRateLimitDelta with X-RateLimit-Reset as an IMF-fixdate
	// (http.TimeFormat), e.g. "Sat, 01 Jan 2000 00:00:03 GMT". It cannot be combined with
	// another X-RateLimit-Reset form.
	XRateLimitDate
	// ResetRoundedNearest is ResetRoundedDown's sibling: the reset is rounded to the nearest
	// whole second (millisecond for XRateLimitEpochMillis), a half rounded up. It needs IETF
	// or an X-RateLimit style, and cannot be combined with ResetRoundedDown.
	ResetRoundedNearest

	allStyles = ResetRoundedNearest<<1 - 1

	xResetStyles  = XRateLimitDelta | XRateLimitEpoch | XRateLimitEpochMillis | XRateLimitDate
	roundingStyle = ResetRoundedDown | ResetRoundedNearest
)

var styleNames = []string{"RetryAfterSeconds", "RetryAfterDate", "RetryAfterMillis", "IETF",
	"XRateLimitDelta", "XRateLimitEpoch", "NoHeaders", "ResetRoundedDown",
	"XRateLimitEpochMillis", "XRateLimitDate", "ResetRoundedNearest"}

// String returns the style's name, or the names of its bits joined by "|".
func (s HeaderStyle) String() string {
	if s == 0 {
		return "RetryAfterSeconds"
	}
	var names []string
	for i, n := range styleNames {
		if s&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if rest := s &^ allStyles; rest != 0 {
		names = append(names, fmt.Sprintf("HeaderStyle(%#x)", uint(rest)))
	}
	return strings.Join(names, "|")
}

func (s HeaderStyle) validate() error {
	switch {
	case s&^allStyles != 0:
		return fmt.Errorf("headgate: quotatest: unknown Config.Headers bits %#x", uint(s&^allStyles))
	case s&NoHeaders != 0 && s != NoHeaders:
		return errors.New("headgate: quotatest: Config.Headers: NoHeaders cannot be combined")
	case s&(RetryAfterSeconds|RetryAfterDate) == RetryAfterSeconds|RetryAfterDate:
		return errors.New("headgate: quotatest: Config.Headers: RetryAfterSeconds and RetryAfterDate both set Retry-After")
	case bits.OnesCount(uint(s&xResetStyles)) > 1:
		return errors.New("headgate: quotatest: Config.Headers: more than one of XRateLimitDelta, XRateLimitEpoch, XRateLimitEpochMillis and XRateLimitDate set X-RateLimit-Reset")
	case s&roundingStyle == roundingStyle:
		return errors.New("headgate: quotatest: Config.Headers: ResetRoundedDown and ResetRoundedNearest cannot be combined")
	case s&roundingStyle != 0 && s&quotaHeaderStyles == 0:
		return errors.New("headgate: quotatest: Config.Headers: ResetRoundedDown and ResetRoundedNearest need IETF or an X-RateLimit style")
	}
	return nil
}

// Config describes a fake provider: the limit it enforces, how it says so, and what an
// admitted request gets. Requests and Period are required; every other field has a
// default, given in its comment, that its zero value selects.
type Config struct {
	// Requests and Period are the enforced limit: Requests per Period. Both are required
	// and must be positive, and Period/Requests must be at least a nanosecond.
	Requests int
	Period   time.Duration

	// Burst is how many requests GCRA and TokenBucket admit back to back from idle.
	// Default (0): Requests. It must be 0 with the windowed algorithms.
	Burst int

	// Algorithm is how the limit is enforced. Default: GCRA.
	Algorithm Algorithm

	// MaxConcurrent, when positive, caps the requests being served at once: a request that
	// arrives while MaxConcurrent others are in the handler is refused at once with Status
	// and spends no quota. Default (0): no cap.
	MaxConcurrent int

	// Status is the status of every refusal (rate, pause or concurrency): 429, 503 or 403
	// (some providers, GitHub among them, refuse over-limit calls with 403).
	// Default (0): 429 Too Many Requests.
	Status int

	// Headers is the style of the rate-limit headers. Default (0): RetryAfterSeconds.
	Headers HeaderStyle

	// Latency is waited before each response head, admitted or refused, after the limiter
	// has decided. It can be changed at run time with SetLatency. Default: none.
	Latency time.Duration

	// Body is the body of admitted responses. Default: `{"ok":true}` and a newline, as
	// application/json. Body and BodySize are mutually exclusive.
	Body []byte
	// BodySize, when positive, makes the body of admitted responses exactly BodySize bytes of
	// JSON padding (`{"pad":"aaaa…"}`; plain "a"s under 10 bytes). Default (0): see Body.
	BodySize int

	// Handler, when set, serves admitted requests instead of Body, so tests can exercise
	// JSON decoding, redirects, streaming… The provider has already set the rate-limit
	// headers and Date when it runs; it may change them. Faults (slow and truncated bodies)
	// apply to what it writes. Default: nil, the Body above.
	Handler http.Handler

	// Tokens, when positive, turns on token mode: besides Requests per Period, the
	// provider enforces Tokens tokens per Period, as LLM APIs do. Each request uses the
	// tokens its TokensHeader says; it is admitted only when both limits hold it (a
	// request of more than TokenBurst tokens never is), and its admitted response is
	// `{"object":"chat.completion","usage":{"total_tokens":N}}` (unless Config.Handler is
	// set). With XRateLimitDelta or XRateLimitEpoch, every response also carries
	// x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens and x-ratelimit-reset-tokens
	// (a Go duration, as OpenAI sends). Token mode needs GCRA. Default (0): no token limit.
	Tokens int
	// TokenBurst is how many tokens may be used back to back from idle.
	// Default (0): Tokens.
	TokenBurst int

	// Now is the provider's clock, for the limiter, the arrival record and the dates in
	// headers. Default: time.Now, which is already virtual inside a testing/synctest bubble.
	// A frozen clock (func returning a constant) gives fully deterministic decisions. Waits
	// (latency, slow bodies) always use the time package's timers, not Now.
	Now func() time.Time
}

// defaultBody is the body of admitted responses when Config has neither Body nor BodySize.
var defaultBody = []byte("{\"ok\":true}\n")

// normalize checks cfg and fills in its defaults.
func (cfg Config) normalize() (Config, error) {
	switch {
	case cfg.Requests <= 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Requests must be positive, got %d", cfg.Requests)
	case cfg.Period <= 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Period must be positive, got %v", cfg.Period)
	case cfg.Period/time.Duration(cfg.Requests) <= 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Period/Requests is under a nanosecond (%v/%d)", cfg.Period, cfg.Requests)
	case cfg.Burst < 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Burst must not be negative, got %d", cfg.Burst)
	case cfg.Algorithm < 0 || int(cfg.Algorithm) >= len(algorithmNames):
		return cfg, fmt.Errorf("headgate: quotatest: unknown Config.Algorithm %v", cfg.Algorithm)
	case cfg.Algorithm.windowed() && cfg.Burst != 0:
		return cfg, errors.New("headgate: quotatest: Config.Burst applies to GCRA and TokenBucket only")
	case cfg.MaxConcurrent < 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.MaxConcurrent must not be negative, got %d", cfg.MaxConcurrent)
	case cfg.Status != 0 && cfg.Status != http.StatusTooManyRequests &&
		cfg.Status != http.StatusServiceUnavailable && cfg.Status != http.StatusForbidden:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Status must be 429, 503 or 403, got %d", cfg.Status)
	case cfg.Latency < 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Latency must not be negative, got %v", cfg.Latency)
	case cfg.BodySize < 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.BodySize must not be negative, got %d", cfg.BodySize)
	case cfg.BodySize > 0 && cfg.Body != nil:
		return cfg, errors.New("headgate: quotatest: Config.Body and Config.BodySize are mutually exclusive")
	}
	switch {
	case cfg.Tokens < 0 || cfg.TokenBurst < 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Tokens and TokenBurst must not be negative, got %d and %d", cfg.Tokens, cfg.TokenBurst)
	case cfg.Tokens == 0 && cfg.TokenBurst != 0:
		return cfg, errors.New("headgate: quotatest: Config.TokenBurst needs Config.Tokens")
	case cfg.Tokens > 0 && cfg.Algorithm != GCRA:
		return cfg, errors.New("headgate: quotatest: Config.Tokens needs GCRA")
	case cfg.Tokens > 0 && cfg.Period/time.Duration(cfg.Tokens) <= 0:
		return cfg, fmt.Errorf("headgate: quotatest: Config.Period/Tokens is under a nanosecond (%v/%d)", cfg.Period, cfg.Tokens)
	}
	if cfg.Tokens > 0 && cfg.TokenBurst == 0 {
		cfg.TokenBurst = cfg.Tokens
	}
	if err := cfg.Headers.validate(); err != nil {
		return cfg, err
	}
	if cfg.Burst == 0 && !cfg.Algorithm.windowed() {
		cfg.Burst = cfg.Requests
	}
	if cfg.Algorithm == TokenBucket {
		if hi, lo := bits.Mul64(uint64(cfg.Burst), uint64(cfg.Period)); hi != 0 || lo > math.MaxInt64 {
			return cfg, fmt.Errorf("headgate: quotatest: TokenBucket: Config.Burst × Period overflows (%d × %v)", cfg.Burst, cfg.Period)
		}
	}
	if cfg.Status == 0 {
		cfg.Status = http.StatusTooManyRequests
	}
	if cfg.Headers == 0 {
		cfg.Headers = RetryAfterSeconds
	}
	switch {
	case cfg.BodySize > 0:
		cfg.Body = padBody(cfg.BodySize)
	case cfg.Body == nil:
		cfg.Body = defaultBody
	default:
		cfg.Body = append([]byte(nil), cfg.Body...) // the caller may reuse its slice
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}

// padBody returns n bytes of JSON padding, or n "a"s when n is too small for JSON.
func padBody(n int) []byte {
	const head, tail = `{"pad":"`, `"}`
	if n < len(head)+len(tail) {
		return []byte(strings.Repeat("a", n))
	}
	return []byte(head + strings.Repeat("a", n-len(head)-len(tail)) + tail)
}
