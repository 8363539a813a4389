package core

import (
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// spentAfter records a success's report (lowReports) and reports whether
// the quota is spent now, though the freshest report left tokens: each
// Remaining below the freshest's, down to 0, was reported by an answer
// from that report's burst — its request sent within a paced interval
// before the freshest's, its answer come after that one left (so the
// server may have decided it later) — in whatever order they came. A
// window's decisions report each Remaining once: those answers took every
// token the freshest report left. A burst leaves over a few ms on a loaded
// machine and reaches the server in another order than it left; over
// loopback the first burst's last requests may reach it several ms after
// ones granted later, and the freshest's answer may come last. It returns
// the report of the quota spent to act on: this one, or, when this one
// reported another token taken or is the freshest, the spent one's wait.
// The freshest report stays the freshest: it is its own Remaining those
// answers spent. One stale report of the quota spent is not enough
// (TestControlEarlierReportNeverOverridesLater): the server may have
// decided it before the freshest, a window turning between them. Read as
// stale, the spent quota armed no probe: the first paced call after the
// burst went unprobed, refused as a near miss, and the probe after it was
// a second refusal where one finds the model. (On a continuous quota the
// next token is a paced interval away, spent or not: nothing to arm.)
func (c *control) spentAfter(o observation, refusal bool) (ratelimit.Feedback, bool) {
	if refusal {
		return o.f, false
	}
	c.lows.observe(o.sent, o.now, o.f)
	l := c.last // (this report, if it is the freshest)
	if c.model == modelContinuous || !c.lows.all(l.remaining, l.sent-c.paced(o.interval), l.sent) {
		return o.f, false
	}
	f := o.f
	f.Remaining, f.Exhausted, f.Pause, f.Reset = 0, true, c.lows.pause, c.lows.reset
	return f, true
}

// lowReports is, for each Remaining below lowReportsN, when the request
// whose success reported it last was sent and answered (and the wait the
// latest report of 0 named). A window's decisions report each Remaining
// once; the freshest report's burst can have taken no more of its tokens
// than it had requests in flight when the server decided it (16 under the
// bench's cap), so a freshest Remaining of lowReportsN or more is never
// found spent this way.
type lowReports struct {
	has          uint32             // bit r: some success reported r remaining
	sent, recv   [lowReportsN]int64 // when the latest one that did was sent, and answered
	pause, reset time.Duration      // the Pause and Reset of the one that reported 0
}

const lowReportsN = 32

func (s *lowReports) observe(sent, recv int64, f ratelimit.Feedback) {
	r := f.Remaining
	if r < 0 || r >= lowReportsN {
		return
	}
	if bit := uint32(1) << r; s.has&bit == 0 || sent >= s.sent[r] {
		s.has |= bit
		s.sent[r], s.recv[r] = sent, recv
		if r == 0 {
			s.pause, s.reset = f.Pause, f.Reset
		}
	}
}

// all reports whether each Remaining below n, down to 0, was reported by
// a request sent at from or later and answered after after.
func (s *lowReports) all(n int, from, after int64) bool {
	if n <= 0 || n > lowReportsN {
		return false
	}
	for r := range n {
		if s.has&(uint32(1)<<r) == 0 || s.sent[r] < from || s.recv[r] <= after {
			return false
		}
	}
	return true
}
