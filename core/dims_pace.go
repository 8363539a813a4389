package core

import (
	"math"

	"github.com/headgate-go/headgate/core/internal/shape"
	"github.com/headgate-go/headgate/core/ratelimit"
)

// The pace of extra dimensions: the server's quota reports for them (a
// Quota whose Name, or else Unit, is a dimension's name, such as
// x-ratelimit-remaining-tokens for "tokens") slow them until their reset:
// never spend what remains faster than it returns (internal/shape).

// dimPaceLocked returns dimension i's effective interval and burst at
// now: the configured ones, slowed by the quota the server reported for it.
func (b *Budget) dimPaceLocked(i int, now int64) (interval, burst int64) {
	d := &b.dims.d[i]
	return d.shape.Slow(now, d.interval, d.burst)
}

// shapeDimsLocked takes the quotas a response reported for the extra
// dimensions, and reports whether one changed a dimension's pace.
func (b *Budget) shapeDimsLocked(f ratelimit.Feedback, now int64) bool {
	if b.dims == nil {
		return false
	}
	changed := false
	for _, q := range f.Quotas {
		i := b.dims.index(q.Name)
		if i < 0 {
			i = b.dims.index(q.Unit)
		}
		if i < 0 {
			continue
		}
		if s, ok := shape.Of(ratelimit.Feedback{Remaining: q.Remaining, Limit: q.Limit, Reset: q.Reset}, now, b.MaxPause()); ok {
			b.dims.d[i].shape = s
			changed = true
		}
	}
	return changed
}

// dimsPaceChangedLocked reports whether some dimension's effective pace
// at now differs from the one its state is kept at.
func (b *Budget) dimsPaceChangedLocked(now int64) bool {
	if b.dims == nil {
		return false
	}
	for i := range b.dims.d {
		d := &b.dims.d[i]
		if iv, bu := b.dimPaceLocked(i, now); iv != d.g.Interval || bu != d.g.Burst {
			return true
		}
	}
	return false
}

// setDimsPaceLocked brings every dimension to its effective pace at now,
// like gcra.State.SetPace for requests (for retimeLocked). SetPace keeps
// the units a dimension holds (up to the new burst), so what a pending
// reservation can still give back is kept in units too: its slack,
// measured at the old interval, is converted to the new one, rounded down
// and capped at the new burst. (Zeroing it instead would make every quota
// report, which most LLM responses carry, cancel the give-back of every
// call in flight.)
func (b *Budget) setDimsPaceLocked(now, at int64) {
	for i := range b.dims.d {
		d := &b.dims.d[i]
		iv, bu := b.dimPaceLocked(i, now)
		if iv == d.g.Interval && bu == d.g.Burst {
			continue
		}
		old := d.g.Interval
		d.g.SetPace(at, iv, bu)
		for p := b.dims.pending.Head; p != nil; p = p.Next {
			if p.slack[i] != math.MaxInt64 {
				p.slack[i] = min(p.slack[i]/old, bu) * iv
			}
		}
	}
}

// dimsShapeEndLocked is the soonest end of a quota report that slows an
// extra dimension (0: none): the queue is re-timed then.
func (b *Budget) dimsShapeEndLocked() int64 {
	if b.dims == nil {
		return 0
	}
	var u int64
	for i := range b.dims.d {
		if e := b.dims.d[i].shape.Until; e > 0 && (u == 0 || e < u) {
			u = e
		}
	}
	return u
}
