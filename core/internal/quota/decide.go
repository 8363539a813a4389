package quota

import "math"

// Next returns when the j-th next request (j >= 1, counting after every
// request Sent has counted) may go, by the estimate, and known, the part
// of that wait the server stated (its pause): known <= at. quiet is when
// the callers' current silence began — the later of the last request sent
// and the moment a caller first had to wait since.
//
// The decision holds each request until the quota the estimate expects at
// the server when it arrives has a token for it under the kind the reports
// make likeliest (a bucket until they contradict one), at the likeliest
// rate and, for windows, at the latest turn they allow (lo), except a few:
// a request not certain of a token may go as soon as the most favourable
// reading allows (hi), on a guess, while fewer guesses are out than the
// window allows and every request but those is certain. Their answers
// narrow the estimate. The window is one at first, doubles with each
// guess admitted up to half the requests out at the last refusal, then
// grows by one a window, and falls back to one with each guess refused
// (TCP's slow start and congestion avoidance); after a refusal the next
// guess waits longer each time (backoff). No wait holds the callers past
// quiet + MaxWait: then one request goes, whatever the estimate, and its
// answer may hold them again.
func (m *Model) Next(now, j, quiet int64) (at, known int64) {
	m.expire(now)
	lo, hi := m.bounds(now, j)
	hi = m.guess(now, hi)
	at = lo
	if free := int64(m.allowed - m.guesses); free > 0 {
		before := now // (the first requests need none certain before them)
		if j > free {
			before, _ = m.bounds(now, j-free)
		}
		at = min(lo, max(hi, before, m.backoff()))
	} else if m.guesses > 0 {
		// No guess left: the next goes when an answer frees one, or at
		// the latest when the oldest unanswered guess counts as lost.
		if oldest := m.sends.oldestGuess(); oldest < Never {
			at = min(at, max(now, oldest+m.lostAfter(), m.expireAt))
		}
	}
	if m.answers && m.heard == 0 && m.firstSent > 0 {
		// The first burst waits for the first answer no longer than it
		// may take (bounds).
		at = min(at, max(now, m.firstSent+m.lostAfter()))
	}
	if !m.covered(j) {
		at = max(at, m.pace.next(now, j, m.sends.last), m.pace.spanNext(&m.sends, now, j))
	}
	at = max(at, m.spreadAt(j))
	known = max(now, min(m.pauseLo, at))
	if limit := quiet + m.cfg.MaxWait; at > limit {
		at = max(now, limit)
		known = min(known, at)
	}
	return at, known
}

// guess is when a guess goes, given hi, the earliest instant the most
// favourable reading places a token: then, or, when no reading places
// one, a guess finds one, later each time it is refused (backoff).
// (Before any answer, the first places one.)
func (m *Model) guess(now, hi int64) int64 {
	if hi == Never && m.heard > 0 {
		return max(now, m.backoff(), m.sends.last+max(m.cfg.Interval, Second/1000))
	}
	return hi
}

// Earliest returns when the next request may find a token under the most
// favourable reading of the reports, or a guess may go, at the earliest
// now. It never waits for answers to come, as Next may when no reading
// places a token and no guess is left: what a fleet sharing the quota
// waits, where one budget's guesses cannot hold the others.
func (m *Model) Earliest(now int64) int64 {
	m.expire(now)
	_, hi := m.bounds(now, 1)
	return max(now, m.guess(now, hi), m.backoff())
}

// backoff is the earliest a guess may go after guesses refused in a row:
// a configured interval (or a millisecond) after the last, doubled for each
// one before it, but no later than the quota is back by what the refusals
// of the round stated (backBy).
func (m *Model) backoff() int64 {
	if m.missed == 0 {
		return 0
	}
	step := max(m.cfg.Interval, Second/1000)
	if m.foreign {
		// (Others take the tokens as they come: a guess that backed off
		// further each time would find none; the share's pace spaces
		// them instead.)
		return m.missedAt + max(step, m.pace.interval())
	}
	at := m.missedAt + step<<min(m.missed-1, 20)
	if m.backBy > m.missedAt {
		at = min(at, m.backBy)
	}
	return at
}

// bounds returns the earliest instants at which the j-th next request
// finds a token at the server under every reading the reports allow (lo)
// and under the most favourable one (hi). j <= 0 asks when every request
// already sent is certain of its token.
func (m *Model) bounds(now, j int64) (lo, hi int64) {
	lo, hi = max(now, m.pauseHi), max(now, m.pauseLo)
	if m.fresh.seq == 0 && m.fresh.at == 0 {
		switch {
		case m.cfg.Interval == 0:
			return Never, hi // configured with no rate and no quota reported: every request a guess
		case m.answers && m.heard == 0 && (m.firstSent == 0 || now < m.firstSent+m.lostAfter()) && m.sends.since(0)+j > (m.cfg.Burst+1)/2:
			// Before the first answer, when answers will come, half the
			// configured burst goes: the first answer may report the server's
			// quota, and the other half then goes by it (a burst configured too
			// large is refused whole at once otherwise).
			return Never, Never
		}
		if m.missed > 0 || m.refusals > 0 && int64(m.allowed) < m.cfg.Burst {
			// Refused since the last admitted: the pace was too fast, and
			// nothing says when the quota returns; each request is a guess,
			// later each time (backoff), until one is admitted, and after
			// a refusal the window of guesses grows back to the configured
			// burst before the pace governs again (no burst at once into
			// a quota that may have returned only in part).
			return Never, hi
		}
		return lo, hi // no quota reported: the configured pace governs
	}
	if m.pauseLo < m.pauseHi {
		// A wait stated in a whole second, maybe rounded up, is no more
		// than a bound on when the quota returns, which the estimate
		// places better.
		lo = max(now, m.pauseLo)
	}
	if m.covered(j) {
		return lo, hi
	}
	var qLo, qHi int64
	if m.kind == Windows {
		qLo, qHi = m.windowsAt(j)
	} else {
		// (A bucket until a report contradicts it: windows that no report
		// tells from a bucket return their quota as often as one.)
		qLo, qHi = m.bucketAt(now, j)
	}
	if m.missed > 0 {
		qLo = Never // (refused since the last admitted: nothing is certain until one is)
	}
	if j == 1 && m.pauseHi > now {
		// The server said a request goes when its stated wait ends,
		// whatever the readings of its quota say.
		qLo, qHi = min(qLo, m.pauseHi), min(qHi, m.pauseHi)
	}
	return max(lo, qLo), max(hi, qHi)
}

// bucketAt is when a bucket has a token for the j-th next request, at the
// likeliest rate (lo) and at the fastest the reports allow (hi), less the
// request's way there: the freshest report left remaining, which returns
// at the rate up to the limit, and the requests in flight and the j − 1
// before it take a token each. A wait the server stated after that report
// says a bucket's next token comes when it ends, and the rest at the rate
// after it.
func (m *Model) bucketAt(now, j int64) (lo, hi int64) {
	k := j + m.inFlight() // the tokens needed, the report's included
	at := func(r float64, pause int64) int64 {
		if r <= 0 {
			return Never
		}
		from, left := m.fresh.at, int64(m.fresh.remaining)
		if pause > from {
			from, left = pause, 1
		}
		t := from + int64(float64(k-left)/r)
		// A full bucket holds no more than its limit: one that fills
		// before the requests still on their way reach it (and the j new
		// ones) holds what they need beyond the limit only after the
		// first of them arrives.
		owd := m.owd()
		ahead := m.sends.after(0, now-owd) // sent, not there yet
		if coming := j + ahead; m.limit > 0 && coming > int64(m.limit) {
			next := now + owd
			if ahead > 0 {
				next = m.sends.sentAt(m.sends.n-uint64(ahead)+1) + owd
			}
			if full := from + int64(float64(int64(m.limit)-left)/r); full <= next {
				t = max(t, next+int64(float64(coming-int64(m.limit))/r))
			}
		}
		return t - owd
	}
	pause := m.pauseLo
	if m.pauseLo < m.pauseHi {
		pause = 0 // (a whole second, maybe rounded up: it places no token)
	}
	return min(at(m.likeliest(), pause), Never), at(m.fastest(), pause)
}

// likeliest is the refill rate the decision paces a bucket at: the configured
// rate while no refusal bounds the rate below it; once one does, the least
// rate the reports show (an estimate too low costs little: what the
// bucket holds meanwhile the next report shows, and goes then; one too
// high costs refusals), or before they show any, half the most they allow;
// configured with no rate, the least rate the reports show, or before any, the quota's
// limit per window; once a certain request was refused, no more than the
// cap, nor less than what came back (bucket.seen). 0: not known.
func (m *Model) likeliest() float64 {
	if g := m.gross(); m.foreign && g > 0 && m.pace.enabled() {
		return m.pace.shareOf(g) // (others spend too: the share)
	}
	b := &m.bucket
	configured := math.Inf(1)
	if m.cfg.Interval > 0 {
		configured = 1 / float64(m.cfg.Interval)
	}
	r := 0.0
	switch {
	case !math.IsInf(configured, 1) && (configured <= b.hi || configured <= b.lo):
		r = configured
	case b.lo > 0:
		r = b.lo
	case !math.IsInf(b.hi, 1):
		r = min(configured, b.hi) / 2
	case m.windowLength() > 0 && m.limit > 0:
		r = float64(m.limit) / float64(m.windowLength())
	}
	if m.cap > 0 && r > m.cap {
		r = max(m.cap, b.seen)
	}
	if r <= 0 {
		r = m.seen() // (nothing bounds the rate above zero: what the server admitted)
	}
	return r
}

// seen is the rate at which the server was seen to admit the requests,
// at the pace's factor; configured with no rate, once a refusal cut the
// pace, the pace's rate; 0 before two were admitted.
func (m *Model) seen() float64 {
	if iv := m.pace.interval(); iv > 0 && m.cfg.Interval == 0 {
		return 1 / float64(iv)
	}
	if iv := m.pace.admittedInterval(m.sends.last); iv > 0 {
		return m.pace.factor / iv
	}
	return 0
}

// fastest is the fastest refill rate a bucket may have: no faster than
// the reports allow, nor than the configured rate (the configured pace bounds the
// sends anyway); configured with no rate, than twice the likeliest. 0: not known.
func (m *Model) fastest() float64 {
	if g := m.gross(); m.foreign && g > 0 {
		return g // (the others may have stopped)
	}
	if m.cfg.Interval > 0 {
		r := min(m.bucket.hi, 1/float64(m.cfg.Interval))
		if m.cap > 0 {
			r = min(r, max(m.cap, m.likeliest())) // (a certain request was refused above it)
		}
		return r
	}
	if l := m.likeliest(); l > 0 {
		return min(max(m.bucket.hi, l), 2*l)
	}
	return m.bucket.hi
}

// windowsAt is when the j-th next request finds a token in a window that
// turns at the latest and at the likeliest instant the reports allow: the
// turn brings the limit back, less what the requests already sent that
// reach the server after it take; each later window brings it again.
func (m *Model) windowsAt(j int64) (lo, hi int64) {
	latest, guess, ok := m.win.bracket(m.window, m.bucket.turns)
	if !ok || m.limit <= 0 {
		return Never, Never
	}
	// A request that may reach the server once the window may have
	// turned may take from the new one.
	from := min(guess, max(m.win.lo, m.fresh.at)) - m.rttHi/2
	// Not knowing a window's length, the favourable reading takes the
	// shortest the window's reports allow: from the first of them to its
	// turn.
	length := m.windowLength()
	short := length
	if short <= 0 && guess != Never && m.win.lo > 0 {
		short = max(guess-m.win.lo, Second/1000)
	}
	return m.windowAt(j, latest, from, length), m.windowAt(j, guess, from, short)
}

// windowAt is when the j-th next request finds a token in a window that
// turns at turn and lasts length (0: not known), the requests sent since
// from taking from it first.
func (m *Model) windowAt(j, turn, from, length int64) int64 {
	if turn == Never {
		return Never
	}
	owd := m.owd()
	left := m.share(int64(m.limit)) - m.sends.after(m.fresh.seq, from)
	if j <= left {
		return turn - owd
	}
	if length <= 0 {
		return Never
	}
	per := max(1, m.share(int64(m.limit)))
	k := (j - left + per - 1) / per
	return turn + k*length - owd
}

// gross is the quota's whole refill rate, whoever spends it: the configured
// rate, or else a window's limit over its length; 0 when not known.
func (m *Model) gross() float64 {
	switch {
	case m.cfg.Interval > 0:
		return 1 / float64(m.cfg.Interval)
	case m.windowLength() > 0 && m.limit > 0:
		return float64(m.limit) / float64(m.windowLength())
	}
	return 0
}

// share is the part of n tokens the decision counts on: all of them,
// or, while others spend from the quota too, the pace's factor of them.
func (m *Model) share(n int64) int64 {
	if !m.foreign || !m.pace.enabled() {
		return n
	}
	return int64(m.pace.shareOf(float64(n)))
}

// covered reports whether the freshest report left a token (of the share)
// for the j-th next request after those in flight: then it needs no
// estimate of the refill, nor the pace.
func (m *Model) covered(j int64) bool {
	return m.fresh.seq != 0 && j+m.inFlight() <= m.share(int64(m.fresh.remaining))
}

// spreadAt is when the j-th next request may go while others spend from
// a quota of windows: the freshest report's Remaining spread evenly until
// the window turns at the latest, so that every budget sharing it, each
// spreading what it sees left, takes from it no faster than it lasts
// until the turn (each report of less left slows each of them). 0 when
// it bounds nothing: no one else spends, the quota is a bucket, the turn
// is not placed, or the request is of a later window.
func (m *Model) spreadAt(j int64) int64 {
	if !m.foreign || m.kind != Windows || m.fresh.seq == 0 {
		return 0
	}
	latest, _, ok := m.win.bracket(m.window, m.bucket.turns)
	k, left := j+m.inFlight(), int64(m.fresh.remaining)
	if !ok || latest == Never || latest <= m.fresh.at || k > left {
		return 0
	}
	return m.fresh.at + k*(latest-m.fresh.at)/(left+1) - m.owd()
}
