package quota

// Observe reads one report and returns what it changed.
func (m *Model) Observe(r Report) Effect {
	var e Effect
	seq := m.sends.find(r.Sent)
	if r.Sent > 0 && r.Recv >= r.Sent {
		if rt := r.Recv - r.Sent; m.rtt < 0 || rt < m.rtt {
			m.rtt = rt
		}
		m.rttHi = max(m.rttHi, r.Recv-r.Sent)
		m.trips++
	}
	m.heard = min(m.heard+1, m.sends.n)
	if r.Refused {
		m.refusals++
	}
	var guess bool
	if r.Refused {
		guess = m.sends.answer(seq, refused, r.Recv, 0)
	} else {
		guess = m.sends.answer(seq, admitted, r.Recv, r.Remaining)
	}
	stale := r.Refused && r.Sent > 0 && r.Sent < m.admittedSent // (refused before a request sent later was admitted)
	if r.Refused && m.cfg.Interval == 0 && m.missed == 0 && seq > m.thresholdSeq && !stale {
		// Configured with no rate, the guesses are all there is: slow
		// start ends at half the requests out when a refusal came (at
		// least two), once a round (those out then are of the round it
		// ends), and not again while the backoff's probes are refused
		// (RFC 5681, 3.1).
		m.threshold, m.thresholdSeq = max(2, int(m.inFlight()+1)/2), m.sends.n
	}
	if guess {
		m.guesses = max(0, m.guesses-1)
		switch {
		case r.Refused:
			m.allowed, m.acked = 1, 0
		case m.fresh.seq == 0 && m.missed == 0 && (m.threshold == 0 || m.allowed < m.threshold):
			m.allowed = min(2*m.allowed, maxGuesses) // (nothing known yet: slow start, up to the threshold)
			if m.threshold > 0 {
				m.allowed = min(m.allowed, m.threshold)
			}
		default:
			m.acked++
			if m.acked >= m.allowed || m.fresh.seq != 0 || m.missed > 0 {
				m.allowed, m.acked = min(m.allowed+1, maxGuesses), 0
			}
		}
	}
	switch {
	case stale:
	case r.Refused && (m.missed == 0 || guess && r.Sent > m.missedAt):
		// Too early: the next guess waits a configured interval (or a
		// millisecond), twice as long after each round of guesses refused
		// in a row; a guess sent before the last refusal came, or at that
		// instant, is of the same round.
		m.missed++
		m.missedAt = r.Recv
		if end := r.Recv + r.Wait; r.Wait > 0 && (m.backBy <= r.Recv || end < m.backBy) {
			m.backBy = end // (each stated wait, even one rounded up, is a bound)
		}
	case !r.Refused:
		m.missed = 0
		m.admittedSent = max(m.admittedSent, r.Sent)
	}
	if r.Refused && !guess && seq > m.capSeq && m.limit > 0 && !m.foreign && m.sends.wasCertain(seq) {
		if l := m.likeliest(); l > 0 {
			m.cap = max(m.bucket.seen, (l+m.bucket.seen)/2)
			m.capSeq = m.sends.n
		}
	}
	e = m.observeWait(r, seq, e)
	if m.quotaIn(r) && m.limit > 0 && !m.foreign {
		m.burstShare(seq)
	}
	if m.quotaIn(r) {
		if m.observeQuota(r, seq, guess) {
			e.Changed = true
		}
	}
	if r.Refused && !m.quotaIn(r) && m.limit < 0 {
		n, nAdmitted := m.sends.within(seq, m.pace.span())
		m.pace.refusedInSpan(n, nAdmitted, m.spread())
	}
	if !m.quotaIn(r) && m.limit < 0 || m.foreign {
		e = m.pace.observe(r, seq, m.sends.n, e, m.foreign)
	}
	if r.Refused {
		e.KeepPlace = true
	}
	// Any answer may change Next: one fewer in flight, a guess back, the
	// estimate narrowed.
	e.Changed = true
	return e
}

// quotaIn reports whether a report says what is left of the quota: a
// Remaining, or a refusal once a quota has been reported (it left none).
func (m *Model) quotaIn(r Report) bool {
	return r.Remaining >= 0 || r.Refused && m.limit > 0
}

// observeWait applies the wait a report states. A refusal's Retry-After
// pauses every caller; one of a whole second or less may have been
// rounded up from a few milliseconds, so one request may go before it
// ends (Next), until one sent inside it is refused; a request sent after
// the refusal came that the server admitted shows it over.
func (m *Model) observeWait(r Report, seq uint64, e Effect) Effect {
	if !r.Refused && m.pauseHi > r.Recv && r.Sent > m.pauseRecv && seq > m.pauseSeq {
		m.pauseLo, m.pauseHi = 0, 0 // admitted after the pause began: it is over
		e.Changed = true
	}
	wait := r.Wait
	if wait <= 0 && r.Refused && r.Remaining == 0 && r.Reset > 0 {
		wait = r.Reset // (a refusal that says when the quota is back says how long to wait)
	}
	if wait <= 0 || r.Sent > 0 && r.Sent < m.admittedSent {
		return e // (a refusal of a request sent before one admitted: its wait is past)
	}
	hi := r.Recv + wait
	lo := hi
	// A request sent inside a bracket and refused: the quota was not back
	// as early as the bracket let it go, and the stated end stands.
	probed := r.Refused && m.pauseLo < m.pauseHi && r.Sent > m.pauseRecv && r.Sent < m.pauseHi
	if probed {
		m.pauseLo = m.pauseHi
		e.Changed, e.Pause = true, m.pauseHi
	}
	if wait <= Second && wait%Second == 0 {
		lo = max(r.Recv, m.pauseLo) // a whole second, maybe rounded up
	}
	if hi > m.pauseHi {
		if lo < m.pauseLo {
			lo = m.pauseLo
		}
		m.pauseLo, m.pauseHi, m.pauseSeq = lo, hi, seq
		m.pauseRecv = r.Recv
		e.Changed = true
		if lo > r.Recv {
			e.Pause = lo // (a whole second or less: no part of it is certain)
		}
	}
	return e
}

// observeQuota takes a report of the quota left: the freshest, by its
// request's sequence, becomes the estimate's anchor, and each new one is
// compared with the one before it for evidence of the quota's kind, its
// refill rate and where its windows turn. It reports whether the estimate
// changed.
func (m *Model) observeQuota(r Report, seq uint64, guessRefused bool) bool {
	if r.Limit > m.limit {
		m.limit = r.Limit
	}
	if r.Window > 0 {
		m.window = r.Window
	}
	rem := r.Remaining
	if r.Refused {
		rem = 0
	}
	if m.limit > 0 {
		rem = min(rem, m.limit)
	}
	s := sample{seq: seq, sent: r.Sent, recv: r.Recv, at: r.Sent + m.owd(), remaining: rem}
	if r.Sent <= 0 {
		s.sent, s.at = r.Recv, r.Recv
	}
	if r.Reset >= 0 {
		s.reset = s.at + r.Reset
	}
	x := stated(r, s)
	res := r.Resolution
	if res <= 0 {
		res = resolution(r.Reset, x[1])
	}
	s.res = res
	if m.limit > 0 && rem >= m.limit-1 && !r.Refused && seq > m.bucket.meter.seq {
		m.bucket.filled = true // (in whatever order its answer came)
	}
	if m.fresh.seq != 0 && !m.fresher(s) {
		return false // an older state: the fresher report stands
	}
	turned, before := false, m.fresh.at
	if m.fresh.seq > 0 {
		i := m.fresh
		if k, ok := m.past.get(m.sends.known(seq)); ok {
			i = k // what was known when this request left: surely decided before it
		}
		turned, before = m.compare(i, s, r), i.at
	} else {
		m.bucket.observe(m, s, r) // (the first report: its reset may bound the rate)
	}
	switch {
	case turned || m.win.hi != 0 && s.sent > m.win.hi:
		// (A request sent after the latest instant the turn may come is
		// decided in the window after, whatever it found.)
		m.win.turned(before, s, x, res)
	case r.Refused && guessRefused: // (a refused guess for the turn: the turn is later)
		m.win.guessRefused(s.at)
		m.win.notYet(s, x, res)
	default:
		m.win.notYet(s, x, res)
	}
	m.fresh = s
	m.past.put(s)
	return true
}

// stated is the instant a report states its quota resets, [lo, hi] on our
// clock: the server stated it when it decided the request, which is after
// the request left (at least half a round trip) and before its answer
// came, and a reset stated as an instant (an epoch) is read at the
// answer's arrival; zero when none is stated.
func stated(r Report, s sample) [2]int64 {
	if r.Reset < 0 {
		return [2]int64{}
	}
	return [2]int64{s.at + r.Reset, r.Recv + r.Reset}
}

// fresher reports whether s states the quota later than the anchor did:
// its request left after the anchor's answer came (surely decided after
// it), or later than the round trips' spread after the anchor's; or,
// sent within that spread of it (the server may have decided the two in
// either order), it leaves less, its refill to now counted (the one
// decided later has spent more).
func (m *Model) fresher(s sample) bool {
	f := m.fresh
	spread := m.spread()
	switch {
	case s.sent > f.recv || s.sent > f.sent+spread || m.sends.readBefore(f.seq, s.seq):
		return true
	case s.sent < f.sent-spread:
		return false
	}
	return m.projected(s) <= m.projected(f)
}

// projected is what s had left plus what returned since, at the slowest
// rate the reports allow a bucket (none on windows).
func (m *Model) projected(s sample) float64 {
	r := float64(s.remaining)
	if m.kind == Bucket {
		r += m.bucket.lo * float64(m.sends.last-s.at)
	}
	return r
}

// inFlight is how many requests may spend a token the freshest report did
// not count: those in flight, and those answered that the server may have
// decided after it.
func (m *Model) inFlight() int64 {
	if m.fresh.seq == 0 {
		return int64(m.sends.n - min(m.heard, m.sends.n))
	}
	return m.sends.mayFollow(m.fresh.seq, m.fresh.sent, m.spread(), m.fresh.remaining)
}

// compare takes the evidence in two successive reports: i, the freshest
// before, and j. What j has left against what i had, less what the
// requests between spent, is what returned between them (rise; less what
// others sharing the quota spent). A bucket returns it gradually: the rise
// bounds its rate. Windows return nothing until a turn, then the whole
// limit: a partial rise contradicts them, a rise of more than a bucket's
// rate allows contradicts a bucket. Only a report whose request left after
// i's answer was read is surely decided after i: others may show a rise
// that is only their order. Less left than every request that may have
// spent explains means others spend from the quota (foreign); a window
// that fell by no more than this budget's own requests took shows they
// stopped. compare reports whether j shows a window turned.
func (m *Model) compare(i, j sample, r Report) (turned bool) {
	spentLo, spentHi := m.sends.spent(i.seq, j.seq, i.sent, i.recv, j.sent, j.recv, m.spread())
	rise := int64(j.remaining) - int64(i.remaining) + spentLo    // what surely returned
	after := j.sent > i.recv || m.sends.readBefore(i.seq, j.seq) // j decided after i
	switch drop := int64(i.remaining) - int64(j.remaining); {
	case after && drop-spentHi >= 2 && !(r.Refused && r.Remaining < 0 && r.Wait > 0):
		m.foreign = true // (less left than every request that may have spent explains, a rounding aside)
	case after && !r.Refused && m.kind == Windows && drop > 0 && drop <= spentLo:
		// A window's quota fell by no more than this budget's own
		// requests surely took: no one else spends from it now, and the
		// share measured is the whole.
		m.foreign, m.ownSpent, m.allSpent = false, 0, 0
		m.pace.unmeasure()
	}
	bucketOK, windowsOK := true, true
	if after && rise >= 1 {
		// A window that turned between them holds its limit again, less
		// what the requests decided since took (at most those that may
		// fall between the two, j's own aside), and a token of slack.
		self := int64(1)
		if r.Refused {
			self = 0
		}
		whole := m.limit > 0 && int64(j.remaining)+spentHi-self >= int64(m.limit)-2
		switch {
		case !whole:
			windowsOK = false // part of the quota came back: no window turned
		case float64(rise) > m.bucket.hi*float64(j.at-i.at+m.spread())+1:
			bucketOK = false // more came back than the bucket's rate allows
			turned = true
		default:
			turned = true
		}
	}
	// (Measured from a report that left none — a refusal's zero, or a
	// quota spent to the floor — what came back since is split among
	// all, by no order the reports show: it anchors no measure.)
	if after && m.foreign && !r.Refused && i.remaining > 0 && m.limit > 0 && !(turned && m.kind == Windows) {
		m.measureShare(i, j, spentLo, spentHi)
	}
	if !m.bucket.observe(m, j, r) {
		bucketOK = false
	}
	m.strike(bucketOK, windowsOK)
	return turned && m.kind != Bucket
}

// strike takes one report's verdict on each kind: each report a kind did
// not explain counts against it, and the kind is the one with fewer
// counts against it (unknown while they are even). A server that changed,
// or evidence blurred by others' spend, moves the kind only once it is
// outweighed.
func (m *Model) strike(bucketOK, windowsOK bool) {
	if !bucketOK {
		m.bucketStrikes++
	}
	if !windowsOK {
		m.windowsStrikes++
	}
	switch {
	case m.bucketStrikes > m.windowsStrikes:
		m.kind = Windows
	case m.windowsStrikes > m.bucketStrikes:
		m.kind = Bucket
	default:
		m.kind = Unknown
	}
}

// measureShare takes what two reports decided in order show of who spent
// the quota between them: this budget's own requests, and the rest — what
// fell beyond them, plus what a bucket not full returned meanwhile at the
// quota's whole rate. The share is this budget's part of all that was
// spent lately (older pairs weigh less: shareMemory): budgets on one key,
// each taking its part of the whole, together spend it at its rate, and
// what others stop spending comes back to the rest. (Refused requests
// spend nothing: a budget that asks too much gets no larger part for it.)
func (m *Model) measureShare(i, j sample, spentLo, spentHi int64) {
	own := float64(spentLo+spentHi) / 2
	refill := 0.0
	if m.kind != Windows && i.remaining < m.limit-1 {
		refill = m.gross() * float64(j.at-i.at)
	}
	others := float64(i.remaining-j.remaining) - own + refill
	m.ownSpent = m.ownSpent*shareMemory + own
	m.allSpent = m.allSpent*shareMemory + own + others
	if m.allSpent > 0 && m.ownSpent > 0 {
		m.pace.measure(min(1, max(m.cfg.MinRate, m.ownSpent/m.allSpent)))
	}
}

// shareMemory is the weight an earlier pair keeps at each new one in
// measureShare: about the last ten pairs count, enough that a Remaining
// rounded by one moves the share little, few enough that a budget that
// stops spending frees its part within a round trip or two of reports.
const shareMemory = 0.9

// burstShare reads the requests sent with request seq at one instant.
// Alone on the quota, those the server admitted left one token less each
// (a bucket's refill between them aside): a wider spread of the Remaining
// they reported than they and the requests that may have been decided
// among them unseen can fill, by two tokens or more (a rounding aside),
// shows others spent between them — before a pair decided in order can
// show it (compare) — and how much: the first share measured.
func (m *Model) burstShare(seq uint64) {
	nA, unknown, most, least := m.sends.burst(seq, m.lostAfter())
	if nA == 0 || most < 0 {
		return
	}
	others := int64(most-least) - (nA - 1) - unknown
	if others < 2 {
		return
	}
	m.foreign = true
	m.ownSpent, m.allSpent = float64(nA), float64(nA+others)
	m.pace.measure(min(m.pace.factor, max(m.cfg.MinRate, m.ownSpent/m.allSpent)))
}
