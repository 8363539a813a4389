package core

// The factor on the configured pace: how a refusal cuts it, or eases it
// when the pace was just above the server's, and how it grows back (CUBIC).

// cut lowers the factor for a refusal that shows the pace above the
// server's, unless it says nothing of the pace the last cut set
// (beforeCut).
func (c *control) cut(o observation, v verdict) verdict {
	if !c.cfg.Enabled() || c.beforeCut(o) {
		return v
	}
	// Fast convergence (RFC 9438 4.7): refused below the rate that failed
	// last, the limit has dropped; aim lower than the refused rate.
	failed := c.factor
	if failed < c.failed {
		failed = c.factor * (1 + c.cfg.Decrease) / 2
	}
	plain := max(c.cfg.MinRate, c.factor*c.cfg.Decrease)
	c.failed, c.factor = failed, c.cutLanding(o.interval)
	if c.factor > plain {
		c.failed = c.factor // landed on the stated rate: CUBIC's plateau, the rate to be careful near
	}
	c.cutAt, c.grewAt, c.growing = o.now, o.now, 0
	c.kept.forget()
	c.run.cut(o.now)
	v.cut = true
	return v
}

// cutLanding is the factor a cut leaves: the factor times Decrease, never
// below MinRate — nor, refused above the rate the server states, below
// that rate (the cut lands on it).
func (c *control) cutLanding(interval int64) float64 {
	landing := max(c.cfg.MinRate, c.factor*c.cfg.Decrease)
	if s := c.statedInterval(); c.aboveStated(interval) && s > 0 {
		landing = max(landing, min(1, float64(interval)/float64(s)))
	}
	return landing
}

// grow restores the factor after a success, along the CUBIC curve from the
// last cut, while the server reports room for more.
func (c *control) grow(o observation, v verdict) verdict {
	if !c.cfg.Enabled() || c.factor >= 1 || o.sent <= c.cutAt {
		return v
	}
	room := o.f.Remaining != 0 && !c.probe.armed && !c.probe.out
	if r := o.f.Remaining; r > 0 && r < c.prevRemaining && c.last.sent == o.sent {
		// The quota drains at this pace: the server's is slower. Growth
		// stops, and this pace is the one to be careful near.
		room = false
		if c.factor < c.failed { // on CUBIC's plateau at this pace: probe beyond it only slowly
			c.failed = c.factor
			c.growing = int64(c.factor * (1 - c.cfg.Decrease) / c.cfg.Increase * 1e9)
		}
	}
	if room && o.now > c.grewAt {
		c.growing += o.now - max(c.grewAt, c.cutAt)
	}
	c.grewAt = o.now
	if !room {
		return v
	}
	w := min(cubic(c.failed, c.cfg.Decrease, c.cfg.Increase, float64(c.growing)/1e9), c.ceiling(o.interval))
	if w <= c.factor {
		return v
	}
	c.factor = min(1, w)
	v.grew = true
	if v.restored = c.factor == 1; v.restored {
		c.run.recovered()
	}
	return v
}

// beforeCut reports whether a refusal says nothing of the pace the last
// cut set: its request was sent before the cut's first paced turn — before
// the cut, at its very instant (one burst counts once), or just after it,
// planned at the pace before (a probe armed then, or the rest of a burst
// that leaves over a few ms on a loaded machine).
func (c *control) beforeCut(o observation) bool {
	return !o.justNow && o.sent < c.cutAt+c.paced(o.interval)
}

// ease cuts the pace to the part of it a run of admissions at the quota
// spent showed the server keeping (spentRun), when that is above what a
// cut leaves: the refused pace was just above the server's, and halving it
// would idle half the quota while CUBIC climbs back. The refused pace is
// the plateau to be careful near.
func (c *control) ease(o observation, v verdict, kept float64) verdict {
	if !c.cfg.Enabled() || c.beforeCut(o) {
		return v
	}
	c.failed = c.factor
	c.factor = min(c.factor, kept)
	// CUBIC's clock restarts from the refused pace: its curve begins at
	// β × that, below the eased factor, and growth resumes only once it
	// climbs back past it — careful near the rate that drew the refusal
	// (restarted where the curve meets the eased factor instead, the pace
	// climbed back into refusals: 1.15× the ideal for a GitHub-style bucket
	// told 1.5× its rate, TestBatchGitHubBucketToldAboveItsRate).
	c.cutAt, c.grewAt, c.growing = o.now, o.now, 0
	c.kept.forget()
	c.run.cut(o.now)
	v.cut = true
	return v
}

// cubic is the factor t seconds of growth after a cut from wMax by beta: the
// CUBIC window W(t) = C(t-K)³ + wMax. K is the time a linear recovery at
// increase per second would take to climb back to wMax; C makes W(0) =
// beta × wMax. It rises fast at first, flattens near wMax at K, and
// climbs beyond it slowly.
func cubic(wMax, beta, increase, t float64) float64 {
	k := wMax * (1 - beta) / increase
	if k <= 0 {
		return wMax
	}
	d := t - k
	return wMax + wMax*(1-beta)*d*d*d/(k*k*k)
}
