package core

import "math"

// The pace of extra dimensions: the server's quota reports slow them, as
// shapeOf slows requests.

// paceLocked returns the dimension's effective interval and burst at now:
// the configured ones, slowed by the quota the server reported for it.
func (d *dim) paceLocked(now int64) (interval, burst int64) {
	interval, burst = d.interval, d.burst
	if now < d.shape.until {
		interval = max(interval, d.shape.interval)
		burst = max(1, min(burst, d.shape.burst))
	}
	return interval, burst
}

// dimsPaceChangedLocked reports whether some dimension's effective pace
// at now differs from the one its state is kept at.
func (b *Budget) dimsPaceChangedLocked(now int64) bool {
	if b.dims == nil {
		return false
	}
	for i := range b.dims.d {
		d := &b.dims.d[i]
		if iv, bu := d.paceLocked(now); iv != d.g.interval || bu != d.g.burst {
			return true
		}
	}
	return false
}

// setDimsPaceLocked brings every dimension to its effective pace at now,
// like setPace for requests (for retimeLocked). setPace keeps the units a
// dimension holds (up to the new burst), so what a pending reservation can
// still give back is kept in units too: its slack, measured at the old
// interval, is converted to the new one, rounded down and capped at the new
// burst. (Zeroing it instead would make every quota report, which most
// LLM responses carry, cancel the give-back of every call in flight.)
func (b *Budget) setDimsPaceLocked(now, at int64) {
	for i := range b.dims.d {
		d := &b.dims.d[i]
		iv, bu := d.paceLocked(now)
		if iv == d.g.interval && bu == d.g.burst {
			continue
		}
		old := d.g.interval
		d.g.setPace(at, iv, bu)
		for p := b.dims.pending.head; p != nil; p = p.next {
			if p.slack[i] != math.MaxInt64 {
				p.slack[i] = min(p.slack[i]/old, bu) * iv
			}
		}
	}
}

// shapeDimsLocked applies the quotas a response reported for the budget's
// dimensions (a Quota whose Name, or else Unit, is a dimension's name, such
// as x-ratelimit-remaining-tokens for "tokens"): never plan to spend what
// remains faster than it returns, as for requests. It reports whether a
// dimension's shape changed.
func (b *Budget) shapeDimsLocked(f Feedback, now int64) bool {
	changed := false
	for _, q := range f.Quotas {
		i := b.dims.index(q.Name)
		if i < 0 {
			i = b.dims.index(q.Unit)
		}
		if i < 0 {
			continue
		}
		if s, ok := shapeOf(Feedback{Remaining: q.Remaining, Limit: q.Limit, Reset: q.Reset}, now, b.maxPause); ok {
			b.dims.d[i].shape = s
			changed = true
		}
	}
	return changed
}
