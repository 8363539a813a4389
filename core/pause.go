package core

// pause is a server-requested pause: its end and the status that set it.
type pause struct {
	until  int64
	status int
}

// extend makes the pause last until at least until; a shorter pause never
// shortens it. It reports whether the end moved.
func (p *pause) extend(until int64, status int) bool {
	if until <= p.until {
		return false
	}
	p.until, p.status = until, status
	return true
}

// holds reports whether a turn at sendAt was held back by the pause.
func (p *pause) holds(now, sendAt int64) bool { return p.until > now && sendAt <= p.until }
