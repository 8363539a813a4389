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
}

// Outcomes of a request, as its answer said.
const (
	pending  uint8 = iota // not answered yet
	admitted              // admitted: it spent a token
	refused               // refused: it spent none
)

// answer records request seq's outcome (if the log still holds it).
func (l *sendLog) answer(seq uint64, o uint8) {
	if seq > 0 && seq <= l.n && l.n-seq < uint64(len(l.out)) {
		l.out[seq%uint64(len(l.out))] = o
	}
}

// spent returns how many requests after i up to j spent a token, counting
// the ones not answered yet as spent, and how many are not answered yet.
func (l *sendLog) spent(i, j uint64) (spent, unknown int64) {
	for s := i + 1; s <= j; s++ {
		if l.n-s >= uint64(len(l.out)) {
			spent++
			unknown++
			continue
		}
		switch l.out[s%uint64(len(l.out))] {
		case pending:
			spent++
			unknown++
		case admitted:
			spent++
		}
	}
	return spent, unknown
}

// add counts n requests sent at t (t never before the last), the freshest
// report then the one answering request ref, and returns the sequence
// number of the last of them.
func (l *sendLog) add(t int64, n int, ref uint64) uint64 {
	t = max(t, l.last)
	for range n {
		l.n++
		l.at[l.n%uint64(len(l.at))] = t
		l.out[l.n%uint64(len(l.out))] = pending
		l.ref[l.n%uint64(len(l.ref))] = ref
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

// near returns how many requests were sent within d of t: around a
// report's request, those the server may have decided on either side of
// it.
func (l *sendLog) near(t, d int64) int64 {
	if d <= 0 {
		return 0
	}
	var k int64
	for s := l.n; s > 0 && l.n-s < uint64(len(l.at)); s-- {
		a := l.at[s%uint64(len(l.at))]
		if a < t-d {
			break
		}
		if a <= t+d {
			k++
		}
	}
	return max(0, k-1)
}

// known returns the sequence number of the request whose report was the
// freshest when request seq was sent; 0 when unknown.
func (l *sendLog) known(seq uint64) uint64 {
	if seq == 0 || seq > l.n || l.n-seq >= uint64(len(l.ref)) {
		return 0
	}
	return l.ref[seq%uint64(len(l.ref))]
}

// gap returns the longest time between two successive requests after i
// up to j (what the log still holds of them).
func (l *sendLog) gap(i, j uint64) int64 {
	var g int64
	for s := i + 1; s < j && s < l.n; s++ {
		if l.n-s >= uint64(len(l.at)) {
			continue
		}
		g = max(g, l.at[(s+1)%uint64(len(l.at))]-l.at[s%uint64(len(l.at))])
	}
	return g
}

// sentAt returns when request seq was sent; 0 when the log no longer holds it.
func (l *sendLog) sentAt(seq uint64) int64 {
	if seq == 0 || seq > l.n || l.n-seq >= uint64(len(l.at)) {
		return 0
	}
	return l.at[seq%uint64(len(l.at))]
}
