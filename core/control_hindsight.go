package core

// hindsight is a first refusal's cut that the answers after it may show
// a near miss. A first refusal at the told pace, once the server admitted
// the whole told burst, is a near miss (keptPace: the burst arrived late,
// the next paced call early) and cuts nothing. But the burst's answers
// need not all come before the refusal's: behind WithMaxInFlight, or on a
// loaded machine, the burst leaves over several round trips and is
// answered in another order than it left, so the refusal may be read
// with 33 of a burst of 40 admitted and the other 7 answered a
// millisecond later. Cut to half at once, the pace stayed there for the
// server's whole second (make demo, told the server's exact rate: 1.78×
// the ideal, and 1.16× the ideal plus the pause in its pause scenario).
// So such a cut is armed here: the admissions of requests sent before the
// cut pace's first turn (the burst the refusal was part of) count on, and
// once they make the whole told burst, the cut is undone — the factor and
// CUBIC's plateau as they were. A refusal of a request sent later
// disarms it (one of the wave's is the same near miss, as keptPace reads
// them); so a pace changed since can only have grown, which the undo
// overrides. Only a refusal that states the quota it found spent
// (Remaining 0 of a Limit) arms it: one that names a wait alone says
// nothing of a burst (a counting window's: undone, its cut drew one more
// refusal over loopback's reordered bursts,
// TestBatchCountingWindowReorderedBursts).
type hindsight struct {
	until    int64   // admissions of requests sent before this count; 0: none armed
	admitted int64   // the wave's admissions so far
	factor   float64 // the factor before the cut
	failed   float64 // CUBIC's plateau before the cut
}

// armHindsight arms hindsight for a first refusal that cut the pace from
// the told one (v.cut, from factor 1), the server having admitted admitted
// calls of the wave before it.
func (c *control) armHindsight(o observation, v verdict, admitted int64, factor, failed float64) {
	if !v.cut || factor != 1 || admitted <= 0 || o.justNow || o.f.Remaining != 0 || o.f.Limit <= 0 {
		return
	}
	c.hind = hindsight{until: c.cutAt + c.paced(o.interval), admitted: admitted, factor: factor, failed: failed}
}

// hindsightAdmit counts one admission and undoes the armed cut when the
// wave shows the whole told burst admitted.
func (c *control) hindsightAdmit(o observation, v verdict) verdict {
	h := &c.hind
	if h.until == 0 || o.sent >= h.until {
		return v
	}
	if h.admitted++; h.admitted < o.burst {
		return v
	}
	c.factor, c.failed = h.factor, h.failed
	c.run.recovered()
	*h = hindsight{}
	v.grew, v.restored = true, c.factor == 1
	return v
}
