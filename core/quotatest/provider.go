package quotatest

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Provider is a fake rate-limited API: an http.Handler that enforces a real limit, answers
// like a real provider, injects faults on demand and records every arrival.
//
// Each request is decided the moment the handler runs, in this order: a pending connection
// reset (ResetConnections), a pause (PauseFor), the concurrency cap (MaxConcurrent), then the
// limiter. Refusals spend no quota. Then the latency is waited and the response written:
// a refusal gets Config.Status, the style's headers and a small JSON error; an admitted
// request gets Config.Body (or Config.Handler) with the informational headers.
//
// What the headers report (before rounding, see HeaderStyle):
//   - limit: the most requests admitted back to back (Burst for GCRA and TokenBucket,
//     Requests for the windowed algorithms); IETF w is the time that whole limit takes to
//     return from empty.
//   - on an admitted response, remaining is how many more could go back to back now, and
//     reset the time until the quota is whole again (GCRA, TokenBucket: the bucket is full;
//     FixedWindow, FirstRequestWindow: the window ends), or for SlidingWindow the time until
//     the current window ends, for SlidingLog until the oldest request in the log leaves it;
//   - on a rate refusal, remaining is 0 and reset is, as on an admitted response, the time
//     until the quota is whole again; Retry-After is the time until a request would be
//     admitted (real GCRA servers report the two apart the same way);
//   - on a pause refusal, reset, like Retry-After, is the time until the pause ends;
//   - on a MaxConcurrent refusal, remaining and reset are the rate's, as on an admitted
//     response, and no Retry-After is sent: no time can be promised.
//
// The decision is taken on arrival, so the times in headers count from then, not from the
// end of the latency: a client told to wait 1s after a 100ms latency waits 100ms more than
// needed, never less.
//
// Serve it over loopback with NewServer or httptest.NewServer, or in-process with Transport.
// A Provider is safe for concurrent use; all its state sits under one mutex.
type Provider struct {
	cfg      Config // normalized; read-only after New
	bodyType string // Content-Type of cfg.Body

	mu         sync.Mutex
	lim        limiter      // guarded by mu
	tok        tokenLimiter // token mode (Config.Tokens); guarded by mu
	faults     faultState   // guarded by mu
	arrivals   []Arrival    // guarded by mu
	generation uint64       // guarded by mu; bumped by Reset so late status updates skip a cleared record
	admitted   int          // guarded by mu
	refused    int          // guarded by mu
	inFlight   int          // guarded by mu
	peak       int          // guarded by mu
}

var _ http.Handler = (*Provider)(nil)

// New returns a Provider enforcing cfg, or an error naming the first invalid field.
// Nothing is started: serve it with NewServer, httptest.NewServer or Transport.
func New(cfg Config) (*Provider, error) {
	userBody := cfg.Body != nil
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	bodyType := "application/json"
	if userBody || len(cfg.Body) < len(`{"pad":""}`) {
		bodyType = http.DetectContentType(cfg.Body)
	}
	return &Provider{
		cfg:      cfg,
		bodyType: bodyType,
		lim:      newLimiter(cfg),
		tok:      newTokenLimiter(cfg),
		faults:   faultState{latency: cfg.Latency},
	}, nil
}

// NewTestProvider returns a Provider enforcing cfg for the test t, as New does, and fails
// t at once (t.Fatal) when cfg is invalid, naming the field: the form a test wants, where
// a bad configuration is the test's own bug.
//
//	p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
//	client := &http.Client{Transport: p.Transport()}
func NewTestProvider(t testing.TB, cfg Config) *Provider {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Outcome is what the provider decided for one arrival.
type Outcome int

const (
	// Admitted requests were served (by Config.Body or Config.Handler).
	Admitted Outcome = iota
	// RefusedRate requests were over the limit.
	RefusedRate
	// RefusedPause requests arrived during a pause (PauseFor).
	RefusedPause
	// RefusedConcurrency requests arrived while MaxConcurrent others were being served.
	RefusedConcurrency
	// ConnectionReset requests had their connection reset (ResetConnections); no status.
	ConnectionReset
)

var outcomeNames = [...]string{"Admitted", "RefusedRate", "RefusedPause", "RefusedConcurrency", "ConnectionReset"}

// String returns the outcome's name, e.g. "RefusedRate".
func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Arrival is the record of one request, taken when the handler began to run.
type Arrival struct {
	At       time.Time // the provider's clock (Config.Now) when the request was decided
	Method   string
	Path     string  // URL path, without the query
	Outcome  Outcome // what the provider decided
	Status   int     // the status sent: 0 for ConnectionReset; for Config.Handler, what it wrote
	InFlight int     // requests being served at this arrival, this one included
	Tokens   int     // token mode: the tokens charged (0 unless admitted)
}

// ticket is one request's decision, taken under the lock.
type ticket struct {
	outcome    Outcome
	status     int
	report     report
	faults     faultState // a snapshot, for the response
	index      int        // in arrivals
	generation uint64
	tokens     int // token mode: the tokens the request uses
}

// decide records an arrival and decides it.
func (p *Provider) decide(r *http.Request) ticket {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now() // under the lock, so decisions see a clock that never goes back
	p.inFlight++
	p.peak = max(p.peak, p.inFlight)
	if !p.faults.pauseUntil.IsZero() && !now.Before(p.faults.pauseUntil) {
		p.endPauseLocked()
	}
	t := ticket{
		status:     p.cfg.Status,
		report:     report{now: now, limit: p.lim.capacity, window: p.window()},
		faults:     p.faults,
		index:      len(p.arrivals),
		generation: p.generation,
	}
	switch {
	case p.faults.resets > 0:
		p.faults.resets--
		t.outcome, t.status = ConnectionReset, 0
	case !p.faults.pauseUntil.IsZero():
		t.outcome = RefusedPause
		t.report.retry = p.faults.pauseUntil.Sub(now)
		t.report.reset = t.report.retry
	case p.cfg.MaxConcurrent > 0 && p.inFlight > p.cfg.MaxConcurrent:
		t.outcome = RefusedConcurrency
		t.report.remaining, t.report.reset = p.lim.state(now)
	default:
		if p.cfg.Tokens > 0 { // both limits or neither: tokens are checked first, spent last
			t.tokens = requestTokens(r)
			if ok, wait := p.tok.check(now, t.tokens); !ok {
				t.outcome = RefusedRate
				t.report.retry = wait
				t.report.remaining, t.report.reset = p.lim.state(now)
				break
			}
		}
		if ok, wait := p.lim.take(now); !ok {
			// Retry-After says when the next request is admitted; the quota
			// headers say when the quota is whole again, as real GCRA servers
			// (throttled, redis_rate) and providers report their reset.
			t.outcome = RefusedRate
			t.report.retry = wait
			t.report.remaining, t.report.reset = p.lim.state(now)
		} else {
			t.outcome, t.status = Admitted, http.StatusOK
			t.report.remaining, t.report.reset = p.lim.state(now)
			if p.cfg.Tokens > 0 {
				p.tok.spend(now, t.tokens)
			}
		}
	}
	if p.cfg.Tokens > 0 {
		t.report.tokens, t.report.tokLimit = true, p.tok.capacity
		t.report.tokRemaining, t.report.tokReset = p.tok.state(now)
	}
	charged := 0
	if t.outcome == Admitted {
		charged = t.tokens
	}
	switch t.outcome {
	case Admitted:
		p.admitted++
	case RefusedRate, RefusedPause, RefusedConcurrency:
		p.refused++
	}
	p.arrivals = append(p.arrivals, Arrival{
		At: now, Method: r.Method, Path: r.URL.Path,
		Outcome: t.outcome, Status: t.status, InFlight: p.inFlight, Tokens: charged,
	})
	return t
}

// window is how long the whole limit takes to return from empty.
func (p *Provider) window() time.Duration {
	switch p.lim.alg {
	case GCRA:
		return time.Duration(p.lim.capacity) * p.lim.interval
	case TokenBucket:
		return time.Duration(ceilDivInt(int64(p.lim.capacity)*int64(p.lim.period), p.lim.requests))
	}
	return p.lim.period
}

// leaver returns the function that takes one request out of the in-flight count; it acts
// once however often it is called.
func (p *Provider) leaver() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.inFlight--
		})
	}
}

// setStatus records the status an admitted request was finally sent with (Config.Handler
// may have written another than the ticket's).
func (p *Provider) setStatus(t ticket, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.generation == p.generation && status != t.status {
		p.arrivals[t.index].Status = status
	}
}

// clientDoneNotifier is implemented by the in-process transport's writer, which knows at
// once when its client closes the body or gives up.
type clientDoneNotifier interface{ notifyClientDone(func()) }

// ServeHTTP decides the request, waits the latency and writes the response.
//
// A request leaves the in-flight count before its client can see the response end: just
// before the last byte of a built-in body is written, before a reset, or when Config.Handler
// returns; in-process also when the client closes the body or gives up.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := p.decide(r)
	leave := p.leaver()
	if n, ok := w.(clientDoneNotifier); ok {
		n.notifyClientDone(leave)
	}
	if t.outcome == ConnectionReset {
		leave()
		resetConnection(w)
		return
	}
	status := t.status
	defer func() {
		p.setStatus(t, status)
		leave()
	}()
	if !sleepCtx(r.Context(), t.faults.latency) {
		return
	}
	h := w.Header()
	h.Set("Date", t.report.now.UTC().Format(http.TimeFormat))
	writeHeaders(h, p.cfg.Headers, t.report)
	if t.outcome != Admitted {
		writeBody(w, t.status, "application/json", refusalBodies[t.outcome], leave)
		return
	}
	fw := &faultWriter{w: w, ctx: r.Context(), method: r.Method, faults: t.faults}
	if p.cfg.Handler != nil {
		p.cfg.Handler.ServeHTTP(fw, r)
	} else if p.cfg.Tokens > 0 {
		writeBody(fw, http.StatusOK, "application/json", usageBody(t.tokens), leave)
	} else {
		writeBody(fw, http.StatusOK, p.bodyType, p.cfg.Body, leave)
	}
	status = fw.statusOr200()
	fw.finish() // a truncated body ends here, by aborting the connection
}

var refusalBodies = map[Outcome][]byte{
	RefusedRate:        []byte("{\"error\":\"rate_limited\"}\n"),
	RefusedPause:       []byte("{\"error\":\"paused\"}\n"),
	RefusedConcurrency: []byte("{\"error\":\"concurrency_limited\"}\n"),
}

// writeBody writes a whole response, calling leave just before its last byte (or its last
// slow chunk) goes, so the client cannot see the end while the request still counts.
func writeBody(w http.ResponseWriter, status int, ctype string, body []byte, leave func()) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	// Errors are ignored: a client gone away is not the provider's problem.
	if fw, ok := w.(*faultWriter); ok && fw.faults.slowChunk > 0 && !fw.faults.truncate {
		fw.beforeLast = leave
		_, _ = fw.Write(body)
		return
	}
	if n := len(body); n > 1 {
		_, _ = w.Write(body[:n-1])
		body = body[n-1:]
	}
	leave()
	_, _ = w.Write(body)
}

// Handler returns p itself, which is an http.Handler; it is there beside Transport.
func (p *Provider) Handler() http.Handler { return p }

// Arrivals returns a copy of the record of every request since New or Reset, in the order
// they were decided.
func (p *Provider) Arrivals() []Arrival {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Arrival(nil), p.arrivals...)
}

// Count returns how many requests arrived since New or Reset, whatever their outcome.
func (p *Provider) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.arrivals)
}

// Admitted returns how many requests were admitted since New or Reset.
func (p *Provider) Admitted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.admitted
}

// Refused returns how many requests were refused since New or Reset: over the rate, during
// a pause or over MaxConcurrent. Connection resets are not refusals.
func (p *Provider) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// InFlight returns how many requests are in flight now (see PeakInFlight).
func (p *Provider) InFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight
}

// PeakInFlight returns the most requests in flight at once since New or Reset, refused ones
// included: the concurrency the clients produced. A request is in flight from its arrival
// until just before its client can see the response end (the last byte of a built-in body,
// a reset), so a slow body keeps it in flight and a client that sends one request at a time
// is seen with one in flight. In-process it also ends as the client closes the body or gives
// up. With Config.Handler it ends when the handler returns, which over the network can be a
// moment after the client read a body of known length to its end.
func (p *Provider) PeakInFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// Reset clears the record: arrivals, counts, and the peak in flight (which restarts at the
// number in flight now). The limiter, a pause and the faults are left as they are.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arrivals = nil
	p.generation++
	p.admitted, p.refused = 0, 0
	p.peak = p.inFlight
}

// CheckPacing checks the recorded arrival times with CheckTimes: every window of length W
// may hold at most burst + floor((W+slack)/interval) arrivals, whatever their outcome (a
// refused or reset request was sent all the same). Filter Arrivals and call CheckTimes to
// check a subset.
func (p *Provider) CheckPacing(burst int, interval, slack time.Duration) error {
	arrivals := p.Arrivals()
	times := make([]time.Time, len(arrivals))
	for i, a := range arrivals {
		times[i] = a.At
	}
	return CheckTimes(times, burst, interval, slack)
}

// String describes the provider's limit, e.g. "quotatest.Provider(GCRA 5/1s burst 5, 429 RetryAfterSeconds)".
func (p *Provider) String() string {
	burst := ""
	if !p.cfg.Algorithm.windowed() {
		burst = fmt.Sprintf(" burst %d", p.cfg.Burst)
	}
	return fmt.Sprintf("quotatest.Provider(%v %d/%v%s, %d %v)",
		p.cfg.Algorithm, p.cfg.Requests, p.cfg.Period, burst, p.cfg.Status, p.cfg.Headers)
}
