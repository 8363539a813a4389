package quota

import "math"

// Kind is what the evidence says of how a server's quota returns.
type Kind uint8

const (
	// Unknown: no report tells the kinds apart yet; the decision takes
	// the quota for a bucket until one does.
	Unknown Kind = iota
	// Bucket: the quota returns continuously, a token every 1/rate (GCRA,
	// token buckets, sliding-window counters).
	Bucket
	// Windows: the quota returns whole when a window turns (fixed windows,
	// anchored to the clock or to a window's first request; sliding logs).
	Windows
)

func (k Kind) String() string {
	switch k {
	case Bucket:
		return "bucket"
	case Windows:
		return "windows"
	}
	return "unknown"
}

// maxGuesses bounds the guesses out at once (Model.allowed).
const maxGuesses = 64

// Second is a second in the model's time unit, the nanosecond.
const Second = int64(1e9)

// Never is an instant no wait reaches.
const Never = int64(math.MaxInt64)

// Config is the model's configuration. Times are nanoseconds.
type Config struct {
	// Interval is the configured pace's interval; 0 when no rate was configured (a
	// learning budget), so nothing but the estimate bounds the pace.
	Interval int64
	// Burst is the configured burst; 0 when no rate was configured.
	Burst int64
	// MaxWait bounds every wait a response causes: while callers wait, no
	// stretch without a request sent lasts longer (Next). > 0.
	MaxWait int64
	// Decrease, MinRate and Increase shape the pace when reports carry no
	// quota (pace.go). Decrease 0 turns that pace off.
	Decrease, MinRate, Increase float64
}

// Report is one response as the model reads it. Unknown numbers are -1.
type Report struct {
	// Sent is when the request was sent, as Sent counted it (the report is
	// placed at that request; 0: not known, the latest); Recv is when its
	// answer came.
	Sent, Recv int64
	// Refused: the server refused the request for its quota.
	Refused bool
	// Remaining and Limit are the quota's, as the server reported them.
	Remaining, Limit int
	// Reset is how long until the quota is restored, from Recv; -1 when
	// unknown. Window is the quota's stated window; 0 when unknown.
	Reset, Window int64
	// Resolution is how finely the reset is stated: a second when the
	// server states it in whole seconds (a delta, an epoch, a date), finer
	// otherwise; 0 when not known.
	Resolution int64
	// Wait is the wait the server asked for (Retry-After), from Recv,
	// already capped; 0 for none.
	Wait int64
}

// Effect is what one report changed, for the budget to enact.
type Effect struct {
	// Pause is the end of the server's stated wait when this report moved
	// it later and no request may go before it; 0 when it did not.
	Pause int64
	// Changed: Next's answers may differ; the waiting turns are re-timed.
	Changed bool
	// Cut: the pace was cut (pace.go), to Factor.
	Cut bool
	// Restored: the pace is back at the configured one after a cut.
	Restored bool
	// KeepPlace: a refusal whose request's retry goes first when the
	// wait it began ends.
	KeepPlace bool
}

// Model is one estimate of a server's quota and the decision made from
// it (see the package doc). Build one with New. It is not safe for
// concurrent use: a budget guards it with its mutex.
type Model struct {
	cfg     Config
	answers bool // every request's answer will be reported (ExpectAnswers)

	// The wire and the requests.
	sends sendLog
	rtt   int64  // the shortest round trip seen; -1: none yet
	rttHi int64  // the longest
	trips int    // round trips measured
	heard uint64 // answers read

	// The quota.
	kind   Kind
	limit  int     // the largest Limit reported; -1: none
	window int64   // a window's stated length; 0: none stated
	fresh  sample  // the freshest report of the quota, by its request's send time
	past   anchors // the freshest reports before it
	bucket bucket  // the bucket hypothesis (bucket.go)
	win    windows // the windows hypothesis (windows.go)
	// Strikes against each kind: reports it did not explain (compare).
	bucketStrikes, windowsStrikes int
	// foreign: others spend from the quota too (a report showed less left
	// than the requests counted explain; a window that fell by this
	// budget's own spend alone clears it); the decision then counts on its
	// share (pace.shareOf), and, on windows, spreads what is left
	// (spreadAt), not the whole quota at once.
	foreign bool
	// ownSpent and allSpent: the tokens this budget spent, and all that
	// were, between reports decided in order while others spend, older
	// pairs weighing less (measureShare): the share is their ratio.
	ownSpent, allSpent float64
	// cap bounds the likeliest rate once a request the estimate held
	// certain was refused (0: none): each such refusal, once per burst
	// (capSeq: the last request sent before it), halves the way from the
	// rate the estimate used down to the least that came back (bucket.seen):
	// not the stated resets', which others sharing the quota may spend.
	cap    float64
	capSeq uint64

	// The server's stated wait: nothing goes before pauseLo; pauseHi is
	// its latest end (later than pauseLo when a whole second may have been
	// rounded up). pauseSeq and pauseRecv: the request whose answer stated
	// it, and when that answer came.
	pauseLo, pauseHi int64
	pauseSeq         uint64
	pauseRecv        int64

	// Guesses out (sent on a guess, not answered yet) and how many may be:
	// a slow start, as TCP's (Observe). missed: rounds of guesses refused
	// in a row, the last at missedAt (backoff).
	guesses, allowed int
	threshold, acked int    // slow start ends at threshold (0: none yet); past it, allowed grows by one a window (acked)
	thresholdSeq     uint64 // the requests sent when threshold was last set
	missed           int
	missedAt         int64
	backBy           int64 // the earliest end of a wait the round's refusals stated
	refusals         int64 // refusals answered
	admittedSent     int64 // the latest send of a request admitted

	pace pace // the pace when reports carry no quota, or others share it (pace.go)

	firstSent int64 // when the first request was sent; 0: none yet
	expireAt  int64 // when guesses out are next looked at for lost ones (expire)
}

// sample is one report placed at its request.
type sample struct {
	seq       uint64
	sent      int64 // when its request was sent
	recv      int64 // when its answer came
	at        int64 // when the server decided it, on our clock: sent + half the shortest round trip
	remaining int
	reset     int64 // the stated reset instant on our clock; 0: none
	res       int64 // how finely the reset is stated
}

// anchors keeps the last freshest reports, by their request's sequence,
// so a report can be compared with what was known when its request left.
type anchors [64]sample

func (a *anchors) put(s sample) { a[s.seq%uint64(len(a))] = s }

func (a *anchors) get(seq uint64) (sample, bool) {
	s := a[seq%uint64(len(a))]
	return s, seq != 0 && s.seq == seq
}

// New returns a model that knows nothing of the server yet.
func New(c Config) Model {
	return Model{cfg: c, rtt: -1, limit: -1, bucket: newBucket(), allowed: 1, pace: newPace(c)}
}

// ExpectAnswers tells the model every request's answer will be reported
// (a Transport reports each): then the first burst waits for the first.
func (m *Model) ExpectAnswers() { m.answers = true }

// ExpectsAnswers reports whether ExpectAnswers was called.
func (m *Model) ExpectsAnswers() bool { return m.answers }

// Sent counts n requests granted at t, on whatever path, in the order they
// were granted, and reports whether the first went on a guess (Next):
// then the decision for the others changed.
func (m *Model) Sent(t int64, n int) (guess bool) {
	if m.firstSent == 0 {
		m.firstSent = t
	}
	if n > 0 {
		if lo, _ := m.bounds(t, 1); lo > t {
			m.guesses, guess = m.guesses+1, true
		}
	}
	m.sends.add(t, n, m.fresh.seq, guess)
	return guess
}

// Lost counts the request sent at sent, found gone at now, as answered
// by nothing: it failed before the server answered, or its answer said
// nothing of the quota (a server error). Whether it spent a token is not
// known; it is in flight no more.
func (m *Model) Lost(sent, now int64) {
	m.heard = min(m.heard+1, m.sends.n)
	if m.sends.answer(m.sends.find(sent), lost, now, -1) {
		m.guesses = max(0, m.guesses-1)
	}
}

// lostAfter is how long an answer may take before the model counts its
// request as lost (expire): four of the longest round trips, at least a
// second.
func (m *Model) lostAfter() int64 { return max(4*m.rttHi, Second) }

// expire counts as lost the guesses out longer than lostAfter: a caller
// that never reports its answer (a permit released unobserved) would hold
// the guess window shut for good. It looks at most every quarter of
// lostAfter.
func (m *Model) expire(now int64) {
	if m.guesses == 0 || now < m.expireAt {
		return
	}
	m.expireAt = now + m.lostAfter()/4
	m.guesses = m.sends.expire(now - m.lostAfter()) // (a guess the log no longer holds is lost too)
}

// SetInterval changes the configured pace's interval (a new rate, SetRate).
func (m *Model) SetInterval(iv int64) {
	m.cfg.Interval = iv
	m.pace.cfg.Interval = iv
}

// SetFactor makes f the pace's factor, for a budget whose fleet keeps it
// in a store.
func (m *Model) SetFactor(f float64) { m.pace.factor = f }

// Ready returns how many requests may go at now without waiting, by the
// estimate: at most limit.
func (m *Model) Ready(now, limit int64) int64 {
	lo, hi := int64(0), limit
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if at, _ := m.Next(now, mid, now); at <= now {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// LastSent is when the last request counted was sent; 0 for none.
func (m *Model) LastSent() int64 { return m.sends.last }

// Kind is what the evidence says of the quota so far.
func (m *Model) Kind() Kind { return m.kind }

// Factor is the pace's factor on the configured rate, in (0, 1]; configured
// with no rate, on the pace the last cut refused, in [MinRate, 1/MinRate]
// (pace.go).
func (m *Model) Factor() float64 { return m.pace.factor }

// Share is the part of the quota the decision counts on: all of it, or,
// while others spend from it too, the share (pace.shareOf).
func (m *Model) Share() float64 {
	if !m.foreign || !m.pace.enabled() {
		return 1
	}
	return m.pace.shareOf(1)
}

// Plateau is the factor that drew the pace's last cut (pace.go).
func (m *Model) Plateau() float64 { return m.pace.plateau }

// Rate returns the estimate of the server's refill rate (net of others'
// spend) in requests per second, and whether there is one: a bucket's
// likeliest rate, or a window's limit over its length.
func (m *Model) Rate() (float64, bool) {
	switch {
	case m.kind != Windows && m.likeliest() > 0:
		return m.likeliest() * 1e9, true
	case m.kind == Windows && m.windowLength() > 0 && m.limit > 0:
		return float64(m.limit) * 1e9 / float64(m.windowLength()), true
	}
	return 0, false
}

// RateBounds returns the bounds the reports put on a bucket's refill rate
// (net of others' spend), per second: lo may be 0 and hi +Inf.
func (m *Model) RateBounds() (lo, hi float64) { return m.bucket.lo * 1e9, m.bucket.hi * 1e9 }

// owd is the one-way delay estimate: half the shortest round trip.
func (m *Model) owd() int64 { return max(0, m.rtt) / 2 }

// spread bounds how much later than another a request sent no earlier
// may reach the server: half again the round trips' range, once enough
// round trips were seen to trust it (minTrips); until then, more than any
// wait (only an answer that came before a request left orders the two).
func (m *Model) spread() int64 {
	if m.trips < minTrips {
		return Never / 4
	}
	return (m.rttHi - max(0, m.rtt)) * 3 / 2
}

// minTrips is how many round trips the wire's range is measured over
// before the model trusts it (spread).
const minTrips = 16

// windowLength is a window's length: stated, or else seen between turns.
func (m *Model) windowLength() int64 {
	if m.window > 0 {
		return m.window
	}
	return m.win.length
}
