package quota

import "math"

// pace is the estimate for a server whose responses report no quota: all
// it shows is which requests it refused. A refusal cuts the pace (a factor
// on the configured rate) once per burst — a refusal of a request sent before
// the cut's first paced turn says nothing of the cut pace — by what the
// run since shows: after a admitted at the pace, the pace was at most one
// in a+1 too fast, so the cut is to a/(a+1) of it, but never deeper than
// Decrease, nor below MinRate. A refusal that states a wait longer than a
// second is a pause, not a pace too fast: it does not cut. It grows back
// along a CUBIC curve (RFC 9438, as the AWS SDKs' adaptive retry mode):
// fast at first, flat near the factor that drew the cut (the plateau),
// which it reaches after the time a linear climb of Increase per second
// would take, and beyond it slowly, up to 1.
//
// Configured with no rate (Interval 0), the pace starts unbounded, and each
// cut is from the pace it refused (cutLearning) — the factor is on that
// pace (base), its plateau — to what the server returned since the last
// cut (refill), or by Decrease, never below MinRate; the curve then climbs
// back from there in the same time at any rate, and past the plateau up to
// 1/MinRate of it (most) until the next refusal.
type pace struct {
	cfg          Config
	factor       float64 // on the configured rate, in [MinRate, 1]; with no rate, on base, in [MinRate, 1/MinRate]
	plateau      float64 // the factor that drew the last cut (CUBIC's W_max)
	decreaseSeq  uint64  // requests up to this one left before the cut took effect
	lastDecrease int64   // the last cut's instant; 0: none yet
	grown        int64   // time spent growing since the cut, ns
	grewAt       int64   // the last answer that grew the factor
	base         float64 // with no rate: the interval the factor applies to (the pace refused last), ns; 0 before a cut
	from         float64 // with no rate: the factor the last cut set
	run          int     // admitted since the last cut, of requests sent after it
	admits       [64]int64
	nAdmits      int
	measured     bool  // others spend, and the factor is the share measured (Model.measureShare): no curve grows it
	spans        bool  // a refusal showed the configured rate is spans, not a bucket (spanNext)
	spanAdmitted int64 // the most the server admitted in one span then

	// refill's evidence: the quota was empty when the refusal the last
	// cut took came (or the first), and when the latest refused request
	// arrived.
	firstRefused, lastRefused int64 // that refusal's arrival; the latest refused request's send
	admitsSince, admitsBefore int   // admitted of those sent after firstRefused: in all, and as counted when lastRefused's answer came
}

func newPace(c Config) pace { return pace{cfg: c, factor: 1, plateau: 1} }

func (p *pace) enabled() bool { return p.cfg.Decrease > 0 }

// interval is the paced interval: the configured one (or base) over the
// factor, at least a nanosecond and at most MaxWait (no wait outlasts it;
// without one, far past any wait, with room for many of it); 0 when the
// pace bounds nothing.
func (p *pace) interval() int64 {
	iv := float64(p.cfg.Interval)
	if iv == 0 {
		iv = p.base
	}
	if iv == 0 || p.factor >= 1 && p.cfg.Interval != 0 {
		return 0
	}
	most := float64(Never >> 20)
	if p.cfg.MaxWait > 0 {
		most = float64(p.cfg.MaxWait)
	}
	return int64(min(max(iv/p.factor, 1), most))
}

// next is when the j-th next request may go at the pace, the last one
// having gone at last.
func (p *pace) next(now, j, last int64) int64 {
	iv := p.interval()
	if iv == 0 || last == 0 {
		return now
	}
	return max(now, last+j*iv)
}

// spanNext is when the request sent k-th from now (k >= 1) may go once a
// refusal has shown the configured rate read as windows (spans): at the paced
// interval after the last, or sooner as part of a burst only while no
// span of the configured burst's length (burst × interval) holds more than the
// server admitted in one (nor the burst at the current factor): the request
// that many before it must have been sent that long before it. So the
// configured burst is not spent at once again into a window the paced requests
// already spent, while the pace itself goes on (a sliding counter returns
// its quota gradually, a log or a fixed window at once: the pace's cuts
// tell them apart). Requests the log no longer holds count as sent long
// ago; 0 when nothing bounds the request.
func (p *pace) spanNext(l *sendLog, now, k int64) int64 {
	if !p.spans {
		return 0
	}
	c := max(1, min(int64(float64(p.cfg.Burst)*p.factor), p.spanAdmitted))
	length := p.span()
	ahead := (k - 1) / c // the times the one c before is itself ahead of now
	at := int64(0)
	if s := int64(l.n) + k - (ahead+1)*c; s > 0 && l.n-uint64(s) < uint64(len(l.at)) {
		at = l.at[uint64(s)%uint64(len(l.at))] + length
	}
	if ahead > 0 {
		at = max(now, at) + ahead*length
	}
	if l.last > 0 {
		at = min(at, max(now, l.last+k*int64(float64(p.cfg.Interval)/p.factor)))
	}
	return at
}

// span is the configured burst's span, burst × interval; 0 when it bounds
// nothing (no rate configured, or a burst of one: the pace is the span).
func (p *pace) span() int64 {
	if p.cfg.Interval == 0 || p.cfg.Burst < 2 {
		return 0
	}
	return p.cfg.Burst * p.cfg.Interval
}

// refusedInSpan takes a refusal of a request after which n requests, it
// included, had been sent in the span before it, nAdmitted of them admitted,
// over a wire whose round trips spread that much. Over the configured burst by
// more than the wire can reorder (one request, and one per interval of
// spread), windows explain the refusal where a bucket at the configured rate
// does not: the pace reads the configured rate as spans from then on
// (spanNext), of at most the most the server admitted in one.
func (p *pace) refusedInSpan(n, nAdmitted, spread int64) {
	if p.enabled() && p.span() > 0 && n > p.cfg.Burst+1+spread/p.cfg.Interval {
		p.spans = true
		p.spanAdmitted = max(p.spanAdmitted, nAdmitted)
	}
}

// observe applies one answer that reported no quota.
//
// Shared is set when others spend from the quota too: then every refusal
// is contention for the share, a stated wait included.
func (p *pace) observe(r Report, seq, sent uint64, e Effect, shared bool) Effect {
	if !p.enabled() {
		return e
	}
	if !r.Refused {
		p.admitted(r.Recv)
		if p.firstRefused > 0 && r.Sent > p.firstRefused {
			p.admitsSince++
		}
		if seq > p.decreaseSeq {
			p.run++
		}
		// (Configured with no rate, nothing grows before the first cut:
		// the pace is unbounded until then.)
		if most := p.most(shared); p.factor < most && !(shared && p.measured) && seq > p.decreaseSeq && (p.cfg.Interval != 0 || p.lastDecrease > 0) {
			if r.Recv > p.grewAt {
				p.grown += r.Recv - max(p.grewAt, p.lastDecrease)
				p.grewAt = r.Recv
			}
			t := float64(p.grown) / float64(Second)
			f := cubic(p.plateau, p.cfg.Decrease, p.cfg.Increase, t)
			if p.cfg.Interval == 0 {
				f = cubicFrom(p.from, p.cfg.Decrease, p.cfg.Increase, t)
			}
			f = min(f, most)
			if f > p.factor {
				e.Restored = p.factor < 1 && f >= 1 // (once: past 1 it only goes on growing)
				p.factor = f
				e.Changed = true
			}
		}
		return e
	}
	p.noteRefusal(r)
	if seq <= p.decreaseSeq {
		return e // sent before the last cut took effect: one burst counts once
	}
	if p.cfg.Interval == 0 {
		return p.cutLearning(r, sent, e, shared)
	}
	f := p.factor
	if r.Wait <= Second || shared {
		a := float64(p.run)
		f *= max(p.cfg.Decrease, a/(a+1))
	}
	end := r.Recv
	if r.Wait > Second {
		end += r.Wait // (the server admits nothing more until then)
	}
	if iv := p.admittedInterval(end); iv > 0 && p.cfg.Interval > 0 {
		f = min(f, float64(p.cfg.Interval)/iv) // (no faster than the server was seen to admit)
	}
	if f >= p.factor {
		return e // (a stated wait at a pace the server admits: a pause, not a pace too fast)
	}
	p.plateau = p.factor
	p.factor = max(p.cfg.MinRate, f)
	p.run = 0
	p.decreaseSeq, p.lastDecrease, p.grewAt, p.grown = sent, r.Recv, r.Recv, 0
	e.Cut, e.Changed = true, true
	return e
}

// measure makes f the factor, the share of the quota that others' measured
// spend leaves this budget; from then on, while others spend, refusals
// still cut it, but only a measure grows it back.
func (p *pace) measure(f float64) {
	if p.enabled() {
		p.measured, p.factor = true, f
	}
}

// unmeasure drops the share measured once no one else spends: the
// factor is the whole again.
func (p *pace) unmeasure() {
	if p.measured {
		p.measured, p.factor = false, 1
	}
}

// shareOf is the part of x the factor grants while others spend from the
// quota too: never more than the whole (a learning pace's factor, grown
// past the pace refused before others showed, is on a rate, not a share).
func (p *pace) shareOf(x float64) float64 { return min(p.factor, 1) * x }

// most is the most the factor grows to: 1, the configured rate or, while
// others spend from the quota, the whole of it (the factor is then the
// share); configured with no rate, 1/MinRate of the pace refused, so the
// pace finds the server's past the plateau but a quiet spell cannot grow
// it without bound.
func (p *pace) most(shared bool) float64 {
	if p.cfg.Interval == 0 && !shared {
		return 1 / p.cfg.MinRate
	}
	return 1
}

// cutLearning is a refusal's cut configured with no rate, from the pace
// or, before any cut, from the rate the server admitted its last requests
// at (too few admitted yet to show one, the guesses go on: Model.Next):
// to the rate at which the server returned its quota since the last cut
// (refill), when that is slower than a cut by Decrease, but not below
// MinRate of the pace refused; else by Decrease. The pace then grows back
// along CUBIC's curve from the rate cut to (cubicFrom): fast at first,
// flat near the pace refused, and past it faster and faster, up to most,
// until the next refusal. Shared with others, a refusal that states a
// wait cuts too: every refusal is contention for the share.
func (p *pace) cutLearning(r Report, sent uint64, e Effect, shared bool) Effect {
	if r.Wait > Second && !shared || p.lastDecrease > 0 && p.run == 0 {
		// A pause, not a pace too fast; or nothing admitted since the
		// last cut: the quota has not returned yet, which the guesses'
		// backoff waits for (the pace sent none of them).
		return e
	}
	iv := float64(p.interval())
	if iv == 0 {
		iv = p.admittedInterval(r.Recv)
	}
	if iv == 0 {
		return e
	}
	p.base, p.plateau, p.factor = iv, 1, p.cfg.Decrease
	if rf := p.refill(); rf > 0 {
		p.factor = max(p.cfg.MinRate, min(p.factor, rf*iv))
	}
	p.from = p.factor
	// The next cut's evidence starts here: the quota was empty now.
	p.firstRefused, p.lastRefused, p.admitsSince, p.admitsBefore = r.Recv, 0, 0, 0
	p.run = 0
	p.decreaseSeq, p.lastDecrease, p.grewAt, p.grown = sent, r.Recv, r.Recv, 0
	e.Cut, e.Changed = true, true
	return e
}

// noteRefusal records a refusal as refill's evidence.
func (p *pace) noteRefusal(r Report) {
	if r.Sent <= 0 {
		return
	}
	if p.firstRefused == 0 {
		p.firstRefused = r.Recv
	} else if r.Sent > p.lastRefused {
		p.lastRefused, p.admitsBefore = r.Sent, p.admitsSince
	}
}

// refill is the least rate, per ns, at which the server returned its
// quota between the refusal the last cut took (or the first) and the
// latest: all it admitted of the requests sent between them, none of which
// reached it before the first nor after the latest; 0 before it admitted
// one.
func (p *pace) refill() float64 {
	if n := p.admitsBefore; n > 0 && p.lastRefused > p.firstRefused {
		return float64(n) / float64(p.lastRefused-p.firstRefused)
	}
	return 0
}

// admitted records an admission at t.
func (p *pace) admitted(t int64) {
	p.admits[p.nAdmits%len(p.admits)] = t
	p.nAdmits++
}

// admittedInterval is the interval at which the server admitted the last
// admissions (up to len(admits)) up to now: a pace it was seen to admit at;
// 0 when too few were seen.
func (p *pace) admittedInterval(now int64) float64 {
	n := min(p.nAdmits, len(p.admits))
	if n < 2 {
		return 0
	}
	oldest := now
	for i := range n {
		oldest = min(oldest, p.admits[i])
	}
	return float64(now-oldest) / float64(n)
}

// cubic is the factor t seconds of growth after a cut from wMax by beta:
// the CUBIC window W(t) = C(t-K)³ + wMax, K the time a linear recovery at
// increase per second takes to climb back to wMax, C such that W(0) =
// beta × wMax.
func cubic(wMax, beta, increase, t float64) float64 {
	k := wMax * (1 - beta) / increase
	if k <= 0 {
		return wMax
	}
	d := t - k
	return wMax + wMax*(1-beta)*d*d*d/(k*k*k)
}

// cubicFrom is CUBIC's factor t seconds after a cut to from, the plateau
// 1: cubic's curve for a cut by beta, moved to start at from (RFC 9438's
// K), unbounded past the plateau.
func cubicFrom(from, beta, increase, t float64) float64 {
	k0 := (1 - beta) / increase
	if k0 <= 0 {
		return max(from, 1) // (no decrease: nothing to climb back)
	}
	c := (1 - beta) / (k0 * k0 * k0)
	d := t - math.Cbrt((1-from)/c)
	return 1 + c*d*d*d
}

// Cubic is cubic, for the stores that keep a fleet's factor by the same
// curve.
func Cubic(wMax, beta, increase, t float64) float64 { return cubic(wMax, beta, increase, t) }
