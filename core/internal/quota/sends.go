package quota

// sendLog counts the client's requests, every one granted on every path, in
// the order they were granted: request n (from 1) is the n-th granted. It
// keeps the send instants of the last len(at) requests, so the model can
// tell how many of its requests reach the server after a given instant.
type sendLog struct {
	n    uint64      // requests counted so far: the sequence number of the last
	last int64       // when the last was sent; 0: none yet
	at   [512]int64  // at[s%len(at)]: when request s was sent
	out  [512]uint8  // out[s%len(out)]: what its answer said (outcome)
	ref  [512]uint64 // ref[s%len(ref)]: the freshest report's request when it was sent
	back [512]int64  // back[s%len(back)]: when its answer came
	left [512]int32  // left[s%len(left)]: the Remaining its answer reported (-1: none)
	gone [512]bool   // gone[s%len(gone)]: it went on a guess (Model.Next)
	read [512]uint64 // read[s%len(read)]: the requests counted when its answer was read
}

// Outcomes of a request, as its answer said.
const (
	pending  uint8 = iota // not answered yet
	admitted              // admitted: it spent a token
	refused               // refused: it spent none
	lost                  // no answer that says: it may have spent one
)

// answer records request seq's outcome, when it came and the Remaining it
// reported (-1: none), if the log still holds it, and reports whether it
// went on a guess and was not answered before.
func (l *sendLog) answer(seq uint64, o uint8, t int64, left int) (guess bool) {
	if seq > 0 && seq <= l.n && l.n-seq < uint64(len(l.out)) {
		k := seq % uint64(len(l.out))
		guess = l.gone[k] && l.out[k] == pending
		l.out[k], l.back[k], l.left[k] = o, t, int32(min(left, 1<<30))
		l.read[k] = l.n
	}
	return guess
}

// readBefore reports whether request i's answer was read before request
// j was sent (i < j), as far as the log holds i: then the server decided
// j after i, whatever the clock's resolution says of the two instants.
func (l *sendLog) readBefore(i, j uint64) bool {
	if i == 0 || i >= j || i > l.n || l.n-i >= uint64(len(l.out)) {
		return false
	}
	k := i % uint64(len(l.out))
	return l.out[k] != pending && l.read[k] < j
}

// spent bounds how many tokens the server spent, by what the client
// knows, between its decisions of two requests i and j (i < j): a request
// it admitted spent one, one not answered yet may have, one refused did
// not. A request reaches the server after another sent more than the
// wire's spread (the round trips' range) before it, or whose answer came
// before it left; so those after i up to j sent that far from both
// surely fall between the two decisions, and the others near either end
// — after i, before i or after j — may.
func (l *sendLog) spent(i, j uint64, iSent, iRecv, jSent, jRecv, spread int64) (lo, hi int64) {
	size := uint64(len(l.at))
	for s := i - 1; s > 0 && l.n-s < size; s-- {
		o, at, back := l.out[s%size], l.at[s%size], l.back[s%size]
		if at < iSent-spread {
			break // (decided before i)
		}
		if o == pending || o == lost || o == admitted && back >= iSent {
			hi++
		}
	}
	for s := i + 1; s <= l.n; s++ {
		held := l.n-s < size
		o, at := pending, int64(0)
		if held {
			o, at = l.out[s%size], l.at[s%size]
		}
		switch {
		case s > j:
			if !held || at > jSent+spread || at >= jRecv {
				return lo, hi
			}
			if o != refused {
				hi++
			}
		case o == refused:
		case o == admitted && held && (s == j ||
			(at > iRecv || at > iSent+spread || l.readBefore(i, s)) && (l.back[s%size] < jSent || at+spread < jSent || l.readBefore(s, j))):
			lo++
			hi++
		default:
			hi++
		}
	}
	return lo, hi
}

// add counts n requests sent at t (t never before the last), the freshest
// report then the one answering request ref, the first on a guess or not,
// and returns the sequence number of the last of them.
func (l *sendLog) add(t int64, n int, ref uint64, guess bool) uint64 {
	t = max(t, l.last)
	for i := range n {
		l.n++
		l.gone[l.n%uint64(len(l.gone))] = guess && i == 0
		l.at[l.n%uint64(len(l.at))] = t
		l.out[l.n%uint64(len(l.out))] = pending
		l.left[l.n%uint64(len(l.left))] = -1
		l.ref[l.n%uint64(len(l.ref))] = ref
		l.read[l.n%uint64(len(l.read))] = ^uint64(0)
	}
	if n > 0 {
		l.last = t
	}
	return l.n
}

// after returns how many of the requests sent after request seq were sent
// at or after t (those older than the log counts as sent before t).
func (l *sendLog) after(seq uint64, t int64) int64 {
	var k int64
	for s := l.n; s > seq && l.n-s < uint64(len(l.at)); s-- {
		if l.at[s%uint64(len(l.at))] < t {
			break
		}
		k++
	}
	return k
}

// since returns how many requests were sent after request seq.
func (l *sendLog) since(seq uint64) int64 {
	if seq >= l.n {
		return 0
	}
	return int64(l.n - seq)
}

// known returns the sequence number of the request whose report was the
// freshest when request seq was sent; 0 when unknown.
func (l *sendLog) known(seq uint64) uint64 {
	if seq == 0 || seq > l.n || l.n-seq >= uint64(len(l.ref)) {
		return 0
	}
	return l.ref[seq%uint64(len(l.ref))]
}

// expire marks the guesses still pending that were sent by t as lost
// and returns how many of the guesses it holds are still pending.
func (l *sendLog) expire(t int64) (n int) {
	size := uint64(len(l.out))
	for s := l.n; s > 0 && l.n-s < size; s-- {
		k := s % size
		switch {
		case !l.gone[k] || l.out[k] != pending:
		case l.at[k] <= t:
			l.out[k] = lost
		default:
			n++
		}
	}
	return n
}

// oldestGuess returns when the oldest guess still pending was sent (Never:
// none the log holds).
func (l *sendLog) oldestGuess() int64 {
	size := uint64(len(l.out))
	oldest := int64(Never)
	for s := l.n; s > 0 && l.n-s < size; s-- {
		if k := s % size; l.gone[k] && l.out[k] == pending {
			oldest = l.at[k]
		}
	}
	return oldest
}

// pending reports whether a request after i, up to j or sent by t, is
// not answered yet (or the log no longer holds it).
func (l *sendLog) pending(i, j uint64, t int64) bool {
	size := uint64(len(l.out))
	for s := i + 1; s <= l.n && (s <= j || l.at[s%size] <= t); s++ {
		if l.n-s >= size || l.out[s%size] == pending {
			return true
		}
	}
	return false
}

// wasCertain reports whether request seq went as certain of its token
// (not on a guess), if the log still holds it.
func (l *sendLog) wasCertain(seq uint64) bool {
	return seq > 0 && seq <= l.n && l.n-seq < uint64(len(l.gone)) && !l.gone[seq%uint64(len(l.gone))]
}

// sentAt returns when request seq was sent; 0 when the log no longer holds it.
func (l *sendLog) sentAt(seq uint64) int64 {
	if seq == 0 || seq > l.n || l.n-seq >= uint64(len(l.at)) {
		return 0
	}
	return l.at[seq%uint64(len(l.at))]
}

// mayFollow counts the requests that may have spent a token after the
// server decided request i (sent at iSent, leaving left): each one it did
// not refuse, unless it surely was decided before i — it left more than
// the wire's spread (the round trips' range) before i, or its answer
// came back before i left, or it left more than i did (what remains only
// falls between refills).
func (l *sendLog) mayFollow(i uint64, iSent, spread int64, left int) int64 {
	size := uint64(len(l.at))
	var k int64
	for s := l.n; s > 0 && l.n-s < size; s-- {
		o, at := l.out[s%size], l.at[s%size]
		if s < i && at < iSent-spread {
			return k
		}
		switch {
		case s == i || o == refused:
		case o == pending:
			k++
		case int(l.left[s%size]) > left && l.left[s%size] >= 0:
		case s > i || l.back[s%size] >= iSent:
			k++
		}
	}
	return k
}

// find returns the sequence number of the request a report sent at t
// answers: the first not answered yet of those sent at t (requests sent
// at one instant are told apart by their answers' order only), else the
// last sent at or before t; the latest when t is 0 or the log no longer
// holds it.
func (l *sendLog) find(t int64) uint64 {
	if t == 0 || l.n == 0 {
		return l.n
	}
	size := uint64(len(l.at))
	first, last := uint64(0), uint64(0)
	for s := l.n; s > 0 && l.n-s < size; s-- {
		a := l.at[s%size]
		if a < t {
			if last == 0 {
				last = s
			}
			break
		}
		if a == t {
			if last == 0 {
				last = s
			}
			if l.out[s%size] == pending {
				first = s
			}
		}
	}
	switch {
	case first != 0:
		return first
	case last != 0:
		return last
	}
	return l.n
}

// within counts the requests sent in the span of length that ends at
// request seq's send (those sent at that instant too), as far as the log
// holds them: all of them (n), and those admitted (nAdmitted).
func (l *sendLog) within(seq uint64, length int64) (n, nAdmitted int64) {
	size := uint64(len(l.at))
	if seq == 0 || seq > l.n || l.n-seq >= size {
		return 0, 0
	}
	end := l.at[seq%size]
	for s := l.n; s > 0 && l.n-s < size && l.at[s%size] > end-length; s-- {
		if l.at[s%size] <= end {
			n++
			if l.out[s%size] == admitted {
				nAdmitted++
			}
		}
	}
	return n, nAdmitted
}

// burst describes the requests sent at the same instant as request seq,
// as far as the log holds them: how many were admitted; how many of them,
// and of the requests sent at other instants that the server may have
// decided between them (sent before the last of their answers came,
// answered after they were sent, and sent no more than horizon before
// them: an answer slower than that counts as lost), may have spent a token
// unseen (not answered yet, lost, or admitted at another instant); and the
// most and least Remaining the admitted reported. Send instants never
// decrease along the log, so it reads only the requests near seq.
func (l *sendLog) burst(seq uint64, horizon int64) (nAdmitted, unknown int64, most, least int) {
	size := uint64(len(l.at))
	if seq == 0 || seq > l.n || l.n-seq >= size {
		return 0, 0, -1, 0
	}
	t := l.at[seq%size]
	held := func(s uint64) bool { return s > 0 && s <= l.n && l.n-s < size }
	first, end := seq, seq // the burst: requests first..end
	for held(first-1) && l.at[(first-1)%size] == t {
		first--
	}
	for end < l.n && l.at[(end+1)%size] == t {
		end++
	}
	most, least = -1, 1<<30
	last := int64(0) // the last answer of the burst; Never while one is out
	for s := first; s <= end; s++ {
		switch k := s % size; l.out[k] {
		case admitted:
			nAdmitted++
			most, least = max(most, int(l.left[k])), min(least, int(l.left[k]))
			last = max(last, l.back[k])
		case refused:
			last = max(last, l.back[k])
		default:
			unknown++
			last = Never
		}
	}
	if nAdmitted < 2 {
		return nAdmitted, unknown, most, least
	}
	unseen := func(k uint64) bool {
		o := l.out[k]
		return o == pending || o == lost || o == admitted && l.back[k] > t
	}
	for s := end + 1; s <= l.n && l.at[s%size] < last; s++ {
		if unseen(s % size) {
			unknown++
		}
	}
	for s := first - 1; held(s) && l.at[s%size] >= t-horizon; s-- {
		if unseen(s % size) {
			unknown++
		}
	}
	return nAdmitted, unknown, most, least
}
