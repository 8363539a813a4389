package core

import (
	"math"

	"github.com/headgate-go/headgate/core/internal/gcra"
)

// storeDim is an extra dimension a MemoryStore keeps: its GCRA and what
// an underspend may give back, by the rule of a budget in memory (see
// settleLocked): a reservation gives back what no reservation made after
// it relied on — the least, over those later reservations, of how far
// each stacked on earlier ones (its tat before, less its send time), less
// what was given back since.
//
// The marks keep that least value for every suffix of the reservations
// with a cost, as a stack whose seq and slack both increase: a new
// reservation's term pops the marks it undercuts, so the slack of
// reservation r is that of the first mark after r. A give-back lowers
// every mark; a pace change converts them as a budget converts its
// reservations' slack. At most maxSlackMarks are kept: the reservations
// before a dropped mark (below floor) give nothing back.
type storeDim struct {
	g     gcra.State
	seq   int64       // the number the next reservation with a cost gets
	floor int64       // reservations numbered below it give nothing back
	marks []slackMark // seq and slack increasing
}

type slackMark struct{ seq, slack int64 }

// maxSlackMarks bounds a dimension's marks, so that a Store keeps a small
// state (redisstore keeps them in its state key, with the rest).
const maxSlackMarks = 32

// setPace brings d to interval and burst at at (gcra.State.SetPace), converting
// the marks as setDimsPaceLocked converts a reservation's slack: in units,
// rounded down, capped at the new burst.
func (d *storeDim) setPace(at, interval, burst int64) {
	if interval == d.g.Interval && burst == d.g.Burst {
		return
	}
	old := d.g.Interval
	d.g.SetPace(at, interval, burst)
	for i := range d.marks {
		d.marks[i].slack = min(d.marks[i].slack/old, burst) * interval
	}
}

// reserve spends n units sent at sendAt and returns the tat before and
// after, and the reservation's number (-1 for n = 0: nothing to settle).
func (d *storeDim) reserve(sendAt, n int64) (before, after, seq int64) {
	before, after = d.g.ReserveN(sendAt, n)
	if n == 0 {
		return before, after, -1
	}
	term := max(0, before-sendAt) // how far it stacks on earlier ones
	for len(d.marks) > 0 && d.marks[len(d.marks)-1].slack >= term {
		d.marks = d.marks[:len(d.marks)-1]
	}
	d.marks = append(d.marks, slackMark{d.seq, term})
	if len(d.marks) > maxSlackMarks {
		d.floor = d.marks[0].seq + 1
		d.marks = append(d.marks[:0], d.marks[1:]...)
	}
	d.seq++
	return before, after, d.seq - 1
}

// cancel gives reservation seq back if nobody reserved after it.
func (d *storeDim) cancel(before, after, seq int64) {
	if d.g.Cancel(before, after) && len(d.marks) > 0 && d.marks[len(d.marks)-1].seq == seq {
		d.marks = d.marks[:len(d.marks)-1]
	}
}

// slack is what reservation seq may give back.
func (d *storeDim) slack(seq int64) int64 {
	if seq < d.floor {
		return 0
	}
	for _, m := range d.marks {
		if m.seq > seq {
			return m.slack
		}
	}
	return math.MaxInt64
}

// settle settles reservation seq, of n units sent at sendAt, at actual
// units: an overspend is charged from sendAt in full, saturating at
// maxSpan; an underspend gives back as much as the reservation's slack
// allows.
func (d *storeDim) settle(sendAt, n, actual, seq int64) {
	g := &d.g
	switch delta := actual - n; {
	case delta > 0:
		e := int64(maxSpan)
		if delta < maxSpan/g.Interval {
			e = delta * g.Interval
		}
		g.Charge(sendAt, e)
	case delta < 0:
		give := min(-delta*g.Interval, d.slack(seq))
		if give <= 0 {
			return
		}
		g.GiveBack(give)
		for i := range d.marks {
			d.marks[i].slack = max(0, d.marks[i].slack-give)
		}
	}
}
