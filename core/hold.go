package core

import "net/http"

// The controller's hold and its probe, as the scheduler enacts them.
//
// While the quota model is unknown, or a whole-second wait may mean a few
// milliseconds, the controller (control.go) holds every caller but lets one
// probe go: the budget's gate — the instant before which no call may go —
// is the later of the server's pause and this hold. The hold first ends at
// the probe's turn with one allowed; the call granted then is the probe
// (sentLocked), and the hold extends to the controller's bound; the
// probe's answer ends it (enactHoldLocked) or turns it into the server's
// wait. Unlike the server's pause, the hold may be shortened.

// gateLocked is the instant before which no call may go: the end of the
// server's pause or of the controller's hold, whichever is later.
func (b *Budget) gateLocked() int64 { return max(b.pause.until, b.hold) }

// gateAllowLocked returns the gate and how many may go at once when it
// ends.
func (b *Budget) gateAllowLocked() (until, allow int64) {
	until, allow = b.pause.until, b.ctl.afterPause()
	if b.hold > b.pause.until {
		until, allow = b.hold, b.holdAllow
	}
	if allow <= 0 {
		allow = b.g.burst
	}
	return until, allow
}

// gateStatusLocked is the status of the response that set the gate.
func (b *Budget) gateStatusLocked() int {
	if b.hold > b.pause.until {
		return b.holdCode
	}
	return b.pause.status
}

// enactHoldLocked applies a verdict's hold: a probe armed (the gate moves
// to its turn), the probe's answer (the hold ends). It reports whether the
// gate moved.
func (b *Budget) enactHoldLocked(v verdict, status int, now int64) bool {
	switch {
	case v.probeAt > 0:
		if b.hold > v.probeAt { // a probe sooner than the hold planned: re-plan from it
			b.restartLocked(now, v.probeAt-b.g.interval, 0)
		}
		b.hold, b.holdAllow, b.holdCode = v.probeAt, 1, status
		return true
	case v.release && b.hold >= now:
		b.hold, b.holdAllow = now, 0
		if b.pause.until <= now {
			// The probe found the pause over (pauseProbe): what may go is what
			// its report says, not the one the pause let go.
			b.ctl.pauseAllow = 0
		}
		b.restartLocked(now, v.from, v.remaining)
		return true
	case v.endHold && b.hold > now:
		b.hold = now
		return true
	}
	return false
}

// restartLocked sets the pacing state to what a report says: the request
// sent at from left remaining requests' worth of quota (-1: unknown, taken
// as none), which returns at the effective pace from then on. The pace
// takes effect at once, without the re-timing setPace does: the report,
// not the pacing so far, says what may go — but never more than the budget
// was told: the request sent at from was one of the told burst, so at most
// burst − 1 more go with it. (The pace's burst, slowed by a report, may
// be that report's Remaining already, which counted the request.)
func (b *Budget) restartLocked(now, from, remaining int64) {
	interval, burst := b.paceLocked(now)
	remaining = min(max(remaining, 0), burst, b.burst-1)
	b.g.repace(interval, burst)
	b.setTatLocked(from + interval - remaining*interval + (burst-1)*interval) // next turn: from + (1-remaining) intervals
}

// setTatLocked sets the pacing state before the queued callers (who are
// re-timed from it) to tat. The re-timing that follows holds it to the
// told bound (told.go): a report never releases a turn the told rate and
// burst withhold, given what was sent.
func (b *Budget) setTatLocked(tat int64) {
	if h := b.queue.head; h != nil {
		h.turn.tatBefore = tat
	} else {
		b.g.rewind(tat)
	}
}

// sentLocked is told of every call granted at now, its turn reserved for
// at: b.told records it (told.go). When the controller
// armed a probe, this call is it: every other caller is held until its
// answer comes (or, if none does, until the hold the controller set). So
// are they when this call was the last of a window's allowance. It
// reports whether the others are held now.
func (b *Budget) sentLocked(now, at int64) bool {
	b.toldSentLocked(now, at)
	p := &b.ctl.pol.probe
	if b.ctl.pol.spent() {
		// The last of a window's allowance (control_window.go):
		// the others wait for the window's end, and its probe.
		b.hold, b.holdAllow, b.holdCode = max(b.hold, b.ctl.pol.win.leftAt), 1, http.StatusOK
		b.retimeQueueLocked(now)
		return true
	}
	if !p.armed || now < b.hold {
		return false
	}
	p.armed, p.out, p.sentAt = false, true, now
	// A probe goes alone: the others are held until its answer. Its hold
	// was planned from when it was armed, for a probe at its turn (the
	// gate, b.hold); a server pause begun since may have pushed the probe
	// past it, or to within a round trip of its end — the calls the
	// pause's end lets go, or the hold's end a millisecond later, would go
	// before its answer came, and that answer's Remaining would count
	// them: part of a whole window read as a continuous quota's. So the
	// hold moves with the probe, as late as the probe went late, and is a
	// second at least when it had passed.
	hold := p.holdUntil
	if late := now - b.hold; late > 0 {
		hold += late
	}
	if hold <= now {
		hold = now + coarse
	}
	if hold > b.hold {
		// With no answer, the hold ends at the coarse bound: one goes, and
		// the rest at the pace (the quota is not known to be whole).
		b.hold, b.holdAllow = hold, 1
	}
	b.retimeQueueLocked(now)
	return true
}
