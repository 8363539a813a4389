package core

import "math"

// The pace of extra dimensions: the server's quota reports slow them, as
// they slow requests (the controller's dimPace).

// dimPaceLocked returns dimension i's effective interval and burst at
// now: the configured ones, slowed by the quota the server reported for it.
func (b *Budget) dimPaceLocked(i int, now int64) (interval, burst int64) {
	d := &b.dims.d[i]
	return b.ctl.dimPace(i, now, d.interval, d.burst)
}

// dimsPaceChangedLocked reports whether some dimension's effective pace
// at now differs from the one its state is kept at.
func (b *Budget) dimsPaceChangedLocked(now int64) bool {
	if b.dims == nil {
		return false
	}
	for i := range b.dims.d {
		d := &b.dims.d[i]
		if iv, bu := b.dimPaceLocked(i, now); iv != d.g.interval || bu != d.g.burst {
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
		iv, bu := b.dimPaceLocked(i, now)
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
