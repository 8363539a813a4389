package core

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
// like setPace for requests (for retimeLocked). A dimension whose pace
// changes forgets what its pending reservations could give back: their
// slack was measured at the old pace.
func (b *Budget) setDimsPaceLocked(now, at int64) {
	for i := range b.dims.d {
		d := &b.dims.d[i]
		iv, bu := d.paceLocked(now)
		if iv == d.g.interval && bu == d.g.burst {
			continue
		}
		d.g.setPace(at, iv, bu)
		for p := b.dims.pending.head; p != nil; p = p.next {
			p.slack[i] = 0
		}
	}
}
