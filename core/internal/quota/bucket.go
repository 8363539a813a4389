package quota

import "math"

// bucket is the bucket hypothesis: a quota that returns a token every
// 1/rate, up to its limit. Its rate, net of what others sharing the quota
// spend, is bounded by what the reports show returned over a span: from
// the meter, a report after which the bucket was never full (a full
// bucket loses what would refill it), to each later report decided surely
// after it, the tokens that returned are what the later one has left,
// less what the meter had, plus what the requests between spent — within
// one token (each report rounds a fraction down), within the requests not
// answered yet (spent or refused), and within those the server may have
// decided on the other side of either report (sendLog.spent).
// A refusal bounds the rate from above only: less than a token was there.
type bucket struct {
	meter  sample
	lo, hi float64 // the rate lies in [lo, hi], per nanosecond
}

func newBucket() bucket { return bucket{hi: math.Inf(1)} }

// observe narrows the rate by report j (r is its report) and reports
// whether a bucket still explains every report.
func (b *bucket) observe(m *Model, j sample, r Report) bool {
	full := m.limit > 0 && j.remaining >= m.limit-1 && !r.Refused
	spread := m.rttHi - max(0, m.rtt)
	switch {
	case full || b.meter.seq == 0:
		b.restart(j)
		return true
	case r.Refused && j.seq > b.meter.seq && b.meter.remaining == 0 && j.sent >= b.meter.recv:
		// (A refusal measured from a report of none left bounds it as well
		// as any; measured from one of more, better.)
	case j.seq <= b.meter.seq || j.sent < b.meter.recv:
		return true // not surely decided after the meter
	}
	if fill := max(m.fastest(), b.lo); m.limit > 0 && fill > 0 &&
		float64(m.sends.gap(b.meter.seq, j.seq))*fill >= float64(m.limit-1-b.meter.remaining) {
		b.restart(j) // idle long enough to fill: what it lost bounds nothing
		return true
	}
	spentLo, spentHi := m.sends.spent(b.meter.seq, j.seq, b.meter.sent, b.meter.recv, j.sent, j.recv, max(0, m.rtt))
	base := float64(int64(j.remaining) - int64(b.meter.remaining))
	span := float64(j.at - b.meter.at)
	if span <= float64(spread) {
		return true
	}
	lo := (base + float64(spentLo) - 1) / (span + float64(spread))
	hi := (base + float64(spentHi) + 1) / (span - float64(spread))
	if r.Refused {
		lo = 0
	}
	if debugf != nil {
		debugf("bucket meter{#%d sent %.3f recv %.3f at %.3f rem %d} j{#%d sent %.3f at %.3f rem %d refused %v} spent[%d,%d] span %.3f → [%.1f, %.1f] was [%.1f, %.1f]", b.meter.seq, float64(b.meter.sent)/1e9-10, float64(b.meter.recv)/1e9-10, float64(b.meter.at)/1e9-10, b.meter.remaining, j.seq, float64(j.sent)/1e9-10, float64(j.at)/1e9-10, j.remaining, r.Refused, spentLo, spentHi, span/1e9, lo*1e9, hi*1e9, b.lo*1e9, b.hi*1e9)
	}
	if hi < b.lo || lo > b.hi {
		// The rate changed, or others began spending: what the reports
		// showed before bounds it no more.
		b.meter, b.lo, b.hi = j, max(0, lo), hi
		return false
	}
	b.lo, b.hi = max(b.lo, lo), min(b.hi, hi)
	return true
}

// restart measures anew from j; the bounds so far stand.
func (b *bucket) restart(j sample) { b.meter = j }
