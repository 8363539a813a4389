package core

import "sync/atomic"

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

// serverPause is a budget's state of the server's pause, guarded by the
// budget's mu but for movedAt.
type serverPause struct {
	pause // the stated pause: its end and status
	// movedAt is when the pause last moved later, on the budget's clock,
	// at least 1 (0: never): a hint read without mu by a caller granted
	// its turn before it (pause_held.go).
	movedAt atomic.Int64
	late    rejoining // refused calls whose reserved place was given up before they came back (place_late.go)
	// waitSince is when callers began waiting with none sent since (0:
	// none waits): no wait the responses cause lasts past it plus
	// MaxPause (quota.Model.Next).
	waitSince int64
}

// moveLater extends the stated pause to until, noting at now that it
// moved (movedAt) when it did, and reports whether it did.
func (p *serverPause) moveLater(until int64, status int, now int64) bool {
	if !p.extend(until, status) {
		return false
	}
	p.movedAt.Store(max(now, 1)) // (pause_held.go)
	return true
}

// waiting notes that callers wait at now, unless they already did.
func (p *serverPause) waiting(now int64) {
	if p.waitSince == 0 {
		p.waitSince = now // (the silence a response may cause counts from here: quietLocked)
	}
}

// idle notes that no caller waits.
func (p *serverPause) idle() { p.waitSince = 0 }
