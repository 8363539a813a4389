package matrix

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// The family (issue 30): where the matrix holds a client to a dozen
// servers it knows, the family draws servers and deployments at random —
// the server's algorithm, limit, headers and rounding, the wire's latency,
// how many uncoordinated clients share the key, the rate they are
// configured with, whether their callers have deadlines — and judges the
// distribution of what the clients reach over many draws, each drawn anew
// from a fresh seed on every run. Draw k of seed s is a pure function of
// (s, k): one draw replays alone, whatever the number of draws around it.

// Configured is the rate and burst every client of a draw is configured
// with, against the server's limit.
type Configured int

const (
	ConfiguredExact Configured = iota // the server's rate and burst
	Configured2x                      // twice them
	ConfiguredHalf                    // half them (at least 1)
	ConfiguredNone                    // no rate: headgate learns it (core.NewLearningBudget), the baseline runs at rate.Inf
)

var configuredNames = [...]string{"exact", "2×", "½", "none"}

// String is the class name, "exact", "2×", "½" or "none".
func (t Configured) String() string { return configuredNames[t] }

// phrase says it in words: "configured at the exact limit", "configured
// at 2× the limit", "configured at ½ the limit" or "no rate configured".
func (t Configured) phrase() string {
	switch t {
	case ConfiguredNone:
		return "no rate configured"
	case ConfiguredExact:
		return "configured at the exact limit"
	}
	return "configured at " + t.String() + " the limit"
}

// factor is what the server's rate and burst are multiplied by.
func (t Configured) factor() float64 { return [...]float64{1, 2, 0.5, 0}[t] }

// Sharing classes: how many clients share the key.
const (
	sharingOne  = "1"
	sharingFew  = "2–4"
	sharingMany = "5–8"
)

// Draw is one server and deployment of the family.
type Draw struct {
	Seed  uint64 `json:"seed"`
	Index int    `json:"index"`

	// The server: Limit requests per Window by Algorithm, and for GCRA and
	// TokenBucket up to Burst back to back (the windowed algorithms admit
	// Limit per Window: Burst is Limit).
	Algorithm quotatest.Algorithm   `json:"algorithm"`
	Limit     int                   `json:"limit"`
	Window    time.Duration         `json:"window"`
	Burst     int                   `json:"burst"`
	Headers   quotatest.HeaderStyle `json:"headers"`

	// The wire: every request and every response takes Latency plus up to
	// Jitter (jitterWire).
	Latency time.Duration `json:"latency"`
	Jitter  time.Duration `json:"jitter"`

	// The deployment: Clients uncoordinated clients (each its own budget,
	// no store) share the key, each configured as Configured says, and
	// split the batch's Calls between them, each with its share of Workers
	// goroutines; Deadlines of every 2 callers have a context deadline (0,
	// 1 or 2), one the server's real rate meets (Deadline).
	Clients    int        `json:"clients"`
	Configured Configured `json:"configured"`
	Deadlines  int        `json:"deadlines"`
	Calls      int        `json:"calls"`
	Workers    int        `json:"workers"`

	// The batch starts Phase past FamilyStart: anywhere in the server's
	// windows and in the clock's second.
	Phase time.Duration `json:"phase"`
}

// FamilyStart is the instant every draw's batch starts from (plus its
// Phase): on a whole 10 s of the clock, in this century (a bubble's clock
// starts in 2000, where a Unix reset reads as seconds from now).
var FamilyStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// familyTries is how many tries every client gives a call, the first
// included, as the matrix's.
const familyTries = 6

// maxFamilyCalls bounds a draw's batch, so a draw runs in virtual time in
// a fraction of a second.
const maxFamilyCalls = 300

// familyWorkers is how many goroutines make a draw's calls, split between
// its clients: enough to keep 200 requests a second in flight over a
// 300 ms round trip.
const familyWorkers = 100

// NewDraw returns draw k of the family of seed s.
func NewDraw(s uint64, k int) Draw {
	r := rand.New(rand.NewPCG(s, uint64(k)))
	d := Draw{Seed: s, Index: k, Workers: familyWorkers}
	d.Algorithm = []quotatest.Algorithm{quotatest.GCRA, quotatest.TokenBucket, quotatest.FixedWindow,
		quotatest.FirstRequestWindow, quotatest.SlidingWindow, quotatest.SlidingLog}[r.IntN(6)]
	if d.Algorithm == quotatest.GCRA || d.Algorithm == quotatest.TokenBucket {
		// 20–200 a second, a burst of 1 to a second's worth, a batch of
		// the burst and 1.5–4 s of pace.
		d.Window = time.Second
		d.Limit = logUniform(r, 20, 200)
		d.Burst = logUniform(r, 1, d.Limit)
		pace := 1.5 + 2.5*r.Float64()
		d.Calls = min(maxFamilyCalls, d.Burst+int(math.Round(pace*float64(d.Limit))))
	} else {
		// 20–120 per window of 1–10 s, a batch of 2.2–4 windows' worth
		// (at least 2.5 within maxFamilyCalls).
		d.Window = time.Duration(1+r.IntN(10)) * time.Second
		d.Limit = logUniform(r, 20, 120)
		d.Burst = d.Limit
		d.Calls = min(maxFamilyCalls, int(math.Round((2.2+1.8*r.Float64())*float64(d.Limit))))
	}
	d.Headers = drawHeaders(r)
	d.Latency = time.Duration(r.IntN(151)) * time.Millisecond
	d.Jitter = time.Duration(r.IntN(int(min(d.Latency, 50*time.Millisecond)/time.Millisecond)+1)) * time.Millisecond
	switch x := r.Float64(); { // half the draws one client; 35 % two to four, 15 % five to eight
	case x < 0.5:
		d.Clients = 1
	case x < 0.85:
		d.Clients = 2 + r.IntN(3)
	default:
		d.Clients = 5 + r.IntN(4)
	}
	d.Configured = Configured(r.IntN(4))
	d.Deadlines = r.IntN(3)
	d.Phase = time.Duration(r.IntN(10_000)) * time.Millisecond
	return d
}

// logUniform is an integer in [lo, hi], uniform in its logarithm.
func logUniform(r *rand.Rand, lo, hi int) int {
	v := math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo))))
	return min(hi, max(lo, int(math.Round(v))))
}

// drawHeaders draws the server's headers: the IETF fields (a quarter of
// draws), X-RateLimit-* with its reset in one of four forms (half), or no
// quota header (a quarter: Retry-After alone, or nothing at all); the
// reset rounded up, down or to the nearest; Retry-After on refusals or not.
func drawHeaders(r *rand.Rand) quotatest.HeaderStyle {
	var s quotatest.HeaderStyle
	switch r.IntN(4) {
	case 0:
		s = quotatest.IETF
	case 1, 2:
		s = []quotatest.HeaderStyle{quotatest.XRateLimitDelta, quotatest.XRateLimitEpoch,
			quotatest.XRateLimitEpochMillis, quotatest.XRateLimitDate}[r.IntN(4)]
	default:
		if r.IntN(2) == 0 {
			return quotatest.RetryAfterSeconds
		}
		return quotatest.NoHeaders
	}
	s |= []quotatest.HeaderStyle{0, quotatest.ResetRoundedDown, quotatest.ResetRoundedNearest}[r.IntN(3)]
	if r.IntN(2) == 0 {
		s |= quotatest.RetryAfterSeconds
	}
	return s
}

// config is the draw's server.
func (d Draw) config() quotatest.Config {
	cfg := quotatest.Config{Requests: d.Limit, Period: d.Window, Algorithm: d.Algorithm, Headers: d.Headers}
	if !d.windowed() {
		cfg.Burst = d.Burst
	}
	return cfg
}

func (d Draw) windowed() bool {
	return d.Algorithm != quotatest.GCRA && d.Algorithm != quotatest.TokenBucket
}

// configured is the rate (per Window) and burst every client is
// configured with; 0, 0 with no rate configured.
func (d Draw) configured() (rate, burst int) {
	if d.Configured == ConfiguredNone {
		return 0, 0
	}
	return Scenario{Factor: d.Configured.factor()}.configured(d.Limit, d.Burst)
}

// Sharing is the draw's sharing class: "1", "2–4" or "5–8" clients.
func (d Draw) Sharing() string {
	switch {
	case d.Clients == 1:
		return sharingOne
	case d.Clients <= 4:
		return sharingFew
	}
	return sharingMany
}

// share is client c's calls (ids from 1, dealt in turn) and goroutines.
func (d Draw) share(c int) (calls []int, workers int) {
	for id := 1 + c; id <= d.Calls; id += d.Clients {
		calls = append(calls, id)
	}
	return calls, max(1, (d.Workers+d.Clients-1)/d.Clients)
}

// hasDeadline reports whether a client's caller j has a deadline.
func (d Draw) hasDeadline(j int) bool { return d.Deadlines == 2 || d.Deadlines == 1 && j%2 == 0 }

// slowLeg is the longest delay of a leg of the wire: latency and all the
// jitter. The ideal counts its round trip at that, since no client can
// know which of its requests the wire will hold back: one that sends on the
// server's schedule meets a refusal whenever an earlier request is held
// back and a later one is not, and to be sure of none it must send the
// jitter late.
func (d Draw) slowLeg() time.Duration { return d.Latency + d.Jitter }

// String describes the draw in one line, e.g. "#7: FirstRequestWindow 80
// per 3s · X-RateLimit-Reset epoch ms, rounded down, no Retry-After ·
// 72+0–15 ms each way · 3 clients, configured at 2× the limit ·
// deadlines: half the callers · 240 calls, 100 goroutines · start
// +3.417s".
func (d Draw) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d: %v %d per %v", d.Index, d.Algorithm, d.Limit, d.Window)
	if !d.windowed() && d.Burst != d.Limit {
		fmt.Fprintf(&b, " burst %d", d.Burst)
	}
	fmt.Fprintf(&b, " · %s · %v+0–%v each way · %d client", headersText(d.Headers), d.Latency, d.Jitter, d.Clients)
	if d.Clients > 1 {
		b.WriteString("s")
	}
	fmt.Fprintf(&b, ", %s · deadlines: %s · %d calls, %d goroutines · start +%v",
		d.Configured.phrase(), []string{"none", "half the callers", "every caller"}[d.Deadlines], d.Calls, d.Workers, d.Phase)
	return b.String()
}

// headersText says what a style sends.
func headersText(s quotatest.HeaderStyle) string {
	if s == quotatest.NoHeaders {
		return "no rate-limit header at all"
	}
	var parts []string
	switch {
	case s&quotatest.IETF != 0:
		parts = append(parts, "IETF RateLimit (t delta seconds)")
	case s&quotatest.XRateLimitDelta != 0:
		parts = append(parts, "X-RateLimit-Reset delta seconds")
	case s&quotatest.XRateLimitEpoch != 0:
		parts = append(parts, "X-RateLimit-Reset epoch seconds")
	case s&quotatest.XRateLimitEpochMillis != 0:
		parts = append(parts, "X-RateLimit-Reset epoch ms")
	case s&quotatest.XRateLimitDate != 0:
		parts = append(parts, "X-RateLimit-Reset HTTP date")
	default:
		parts = append(parts, "no quota header")
	}
	if s&(quotatest.IETF|quotatest.XRateLimitDelta|quotatest.XRateLimitEpoch|quotatest.XRateLimitEpochMillis|quotatest.XRateLimitDate) != 0 {
		switch {
		case s&quotatest.ResetRoundedDown != 0:
			parts = append(parts, "rounded down")
		case s&quotatest.ResetRoundedNearest != 0:
			parts = append(parts, "rounded to nearest")
		default:
			parts = append(parts, "rounded up")
		}
	}
	if s&quotatest.RetryAfterSeconds != 0 {
		parts = append(parts, "Retry-After")
	} else {
		parts = append(parts, "no Retry-After")
	}
	return strings.Join(parts, ", ")
}
