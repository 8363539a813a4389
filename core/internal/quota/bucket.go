package quota

import "math"

// bucket is the bucket hypothesis: a quota that returns a token every
// 1/rate, up to its limit. Its rate, net of what others sharing the quota
// spend, is bounded by what the reports show returned over a span: from
// one report to a later one decided surely after it, the tokens that
// returned are what the later one has left, less what the earlier had,
// plus what the requests between spent — within one token (each report
// rounds a fraction down), within the requests not answered yet (spent or
// refused), and within those the server may have decided on the other
// side of either report (sendLog.spent). What returned bounds the rate
// from below over any span (a full bucket only loses what would overflow
// it), and from above over a span in which the bucket was never full:
// from the meter, the first report after the last that may have found it
// full. A refusal bounds the rate from above only: less than a token was
// there.
type bucket struct {
	origin sample  // where the lower bound is measured from
	meter  sample  // where the upper bound is measured from
	filled bool    // a report after the meter may have found the bucket full
	lo, hi float64 // the rate lies in [lo, hi], per nanosecond
}

func newBucket() bucket { return bucket{hi: math.Inf(1)} }

// observe narrows the rate by report j (r is its report) and reports
// whether a bucket still explains every report.
func (b *bucket) observe(m *Model, j sample, r Report) bool {
	full := m.limit > 0 && j.remaining >= m.limit-1 && !r.Refused
	if b.origin.seq == 0 {
		b.origin = j
	}
	if !full && (b.filled || b.meter.seq == 0) && j.seq > b.meter.seq {
		b.meter, b.filled = j, false
		return true
	}
	lo, _, okLo := b.measure(m, b.origin, j)
	loM, hi, ok := b.measure(m, b.meter, j)
	if okLo {
		lo = max(lo, loM)
	} else {
		lo = loM
	}
	// A bucket that may have filled since the meter (or is full now) lost
	// what would have overflowed: the rise bounds nothing from above.
	fill := max(m.fastest(), b.lo)
	if full || b.filled || b.meter.seq == 0 || m.limit <= 0 || math.IsInf(fill, 1) || fill <= 0 ||
		float64(m.sends.gap(b.meter.seq, j.seq))*fill >= float64(m.limit-1-b.meter.remaining) {
		hi = math.Inf(1)
	}
	if full {
		b.filled = true
	}
	if r.Refused {
		lo = 0
	}
	if !ok && !okLo {
		return true
	}
	if hi < b.lo || lo > b.hi {
		// The rate changed, or others began spending: what the reports
		// showed before bounds it no more.
		b.origin, b.meter, b.filled, b.lo, b.hi = j, j, full, max(0, lo), hi
		return false
	}
	b.lo, b.hi = max(b.lo, lo), min(b.hi, hi)
	return true
}

// measure bounds the rate by what returned between reports i and j; ok
// is false when j is not surely decided after i, or too close to it for
// the wire's spread to allow a bound.
func (b *bucket) measure(m *Model, i, j sample) (lo, hi float64, ok bool) {
	spread := m.rttHi - max(0, m.rtt)
	if j.seq <= i.seq || j.sent < i.recv && j.sent <= i.sent+spread {
		return 0, math.Inf(1), false
	}
	span := float64(j.at - i.at)
	if span <= float64(spread) {
		return 0, math.Inf(1), false
	}
	spentLo, spentHi := m.sends.spent(i.seq, j.seq, i.sent, i.recv, j.sent, j.recv, spread)
	rise := float64(int64(j.remaining) - int64(i.remaining))
	lo = max(0, (rise+float64(spentLo)-1)/(span+float64(spread)))
	hi = (rise + float64(spentHi) + 1) / (span - float64(spread))
	return lo, hi, true
}
