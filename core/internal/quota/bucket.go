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
	// seen is the part of lo that what came back shows, without the
	// stated resets: they state what the server returns, which is more
	// than what is left of it for this client while others spend.
	seen float64

	// noStated: a stated reset contradicted what the reports showed
	// returned, so resets are not read as a bucket's (stated).
	noStated bool

	// turns bounds a window's length, were the quota windows: more came
	// back over a span than one turn brings (turns, below); 0: no bound.
	turns int64
}

func newBucket() bucket { return bucket{hi: math.Inf(1)} }

// observe narrows the rate by report j (r is its report) and reports
// whether a bucket still explains every report. The evidence: what came
// back since the origin (a lower bound), since the meter (both bounds,
// unless the bucket may have filled meanwhile), and the reset j states
// (both, while resets read as a bucket's).
func (b *bucket) observe(m *Model, j sample, r Report) bool {
	full := m.limit > 0 && j.remaining >= m.limit-1 && !r.Refused
	if b.origin.seq == 0 {
		b.origin = j
	}
	lo, hi, measured := 0.0, math.Inf(1), false
	if l, _, ok := b.measure(m, b.origin, j); ok {
		lo, measured = l, true
		b.bound(m, b.origin, j, l)
	}
	// A bucket that may have filled since the meter (a report showed it
	// full, or this one does) lost what would have overflowed: the rise
	// bounds nothing from above. A bucket that filled between two reports
	// shows it in the first request decided after (each answer reports
	// what its request left): while one of the requests up to j, or sent
	// within the spread of it, is not answered, that may be still to come.
	if l, h, ok := b.measure(m, b.meter, j); ok && b.meter.seq != 0 {
		lo, measured = max(lo, l), true
		if !full && !b.filled && m.limit > 0 && !m.sends.pending(b.meter.seq, j.seq, j.sent+m.spread()) {
			hi = h
		}
	}
	switch {
	case full:
		b.filled = true
	case (b.filled || b.meter.seq == 0) && j.seq > b.meter.seq:
		b.meter, b.filled = j, false
	}
	if r.Refused {
		lo = 0 // (a refusal bounds the rate from above only)
	}
	if measured {
		b.seen = max(b.seen, lo)
	}
	if rlo, rhi, ok := b.stated(m, j); ok && !b.noStated {
		switch {
		case !measured:
			lo, hi, measured = rlo, rhi, true
		case rhi < lo || rlo > hi || rhi < b.lo || rlo > b.hi:
			// The reset is not when the quota is whole again (a sliding
			// counter's window end, say): it bounds the rate no more.
			b.noStated = true
		default:
			lo, hi = max(lo, rlo), min(hi, rhi)
		}
	}
	if !measured {
		return true
	}
	if hi <= 0 {
		// Nothing came back over the span, or less than nothing: no
		// bucket refills so (windows do between turns; so does a bucket
		// others drain).
		return false
	}
	if hi < b.lo || lo > b.hi {
		// The rate changed, others began spending, or the wire reordered
		// more than its spread showed: the bounds widen to both, and
		// measure anew from here.
		b.origin, b.meter, b.filled, b.turns = j, j, full, 0
		b.lo, b.hi = max(0, min(lo, b.lo)), max(hi, b.hi)
		b.seen = min(b.seen, b.lo)
		return false
	}
	b.lo, b.hi = max(b.lo, lo), min(b.hi, hi)
	return true
}

// measure bounds the rate by what returned between reports i and j; ok
// is false when j is not surely decided after i, or too close to it for
// the wire's spread to allow a bound.
func (b *bucket) measure(m *Model, i, j sample) (lo, hi float64, ok bool) {
	spread := m.spread()
	if j.seq <= i.seq || j.sent <= i.recv && j.sent <= i.sent+spread && !m.sends.readBefore(i.seq, j.seq) {
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

// stated bounds the rate by the reset report j states: a bucket states
// when it is full again, so what it lacks of its limit returns by then,
// within the reset's resolution either way and the token the report's
// Remaining rounds down. The reset counts from the decision (a delta) or
// from the answer's arrival (an instant): either.
func (b *bucket) stated(m *Model, j sample) (lo, hi float64, ok bool) {
	if j.reset <= 0 || m.limit <= 0 {
		return 0, math.Inf(1), false
	}
	soon := float64(j.reset - j.at)
	late := soon + float64(j.recv-j.at)
	lack := float64(m.limit - j.remaining)
	lo = max(0, (lack-1)/(late+float64(j.res)))
	hi = math.Inf(1)
	if soon > float64(j.res) {
		hi = lack / (soon - float64(j.res))
	}
	return lo, hi, true
}

// bound takes what came back between reports i and j (at least rate ×
// the span, by measure) as evidence on windows: each turn brings back
// at most the limit, so more than that over a span S needs turns at
// least every S × limit ÷ (what came back − limit).
func (b *bucket) bound(m *Model, i, j sample, rate float64) {
	if m.limit <= 0 {
		return
	}
	span := float64(j.at-i.at) + float64(m.spread())
	back := rate * span
	if back <= float64(m.limit) {
		return
	}
	if l := int64(span * float64(m.limit) / (back - float64(m.limit))); b.turns == 0 || l < b.turns {
		b.turns = l
	}
}
