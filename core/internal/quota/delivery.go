package quota

// delivery measures the rate at which the server admits the client's
// requests while it refuses some of them: then its quota is spent as fast
// as it returns, and what it admits per unit of time is its refill rate,
// less what others sharing the quota spend (the rate this client may
// spend). It counts answers by when they came, not by the order the
// server decided them in, so answers out of order do not skew it.
type delivery struct {
	admitted, refused int64      // answers counted so far
	log               [128]tally // the counts as of the last answers
	n                 int        // answers logged
}

type tally struct {
	at                int64 // when the answer came
	admitted, refused int64 // the counts then
}

// answer counts one answer that came at t.
func (d *delivery) answer(t int64, refused bool) {
	if refused {
		d.refused++
	} else {
		d.admitted++
	}
	d.log[d.n%len(d.log)] = tally{at: t, admitted: d.admitted, refused: d.refused}
	d.n++
}

// rate returns the admitted requests per nanosecond over the last span
// (at least min long, as far back as the log holds), and whether the
// server was refusing throughout: a refusal in its first half and one in
// its second. Without refusals what it admitted bounds its rate from
// below only.
func (d *delivery) rate(now, min int64) (rate float64, saturated bool) {
	if d.n < 2 {
		return 0, false
	}
	last := d.log[(d.n-1)%len(d.log)]
	first := last
	for k := 2; k <= d.n && k <= len(d.log); k++ {
		t := d.log[(d.n-k)%len(d.log)]
		first = t
		if last.at-t.at >= min {
			break
		}
	}
	span := last.at - first.at
	if span < min || span <= 0 {
		return 0, false // (a short span holds a burst: no rate)
	}
	// The refusals in each half: from the counts at its ends.
	mid := first.at + span/2
	midTally := first
	for k := 1; k <= d.n && k <= len(d.log); k++ {
		t := d.log[(d.n-k)%len(d.log)]
		if t.at <= mid {
			midTally = t
			break
		}
	}
	early, late := midTally.refused > first.refused, last.refused > midTally.refused
	return float64(last.admitted-first.admitted) / float64(span), early && late
}
