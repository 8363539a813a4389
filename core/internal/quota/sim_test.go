package quota

import (
	"cmp"
	"container/heap"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A small discrete-event simulation of a budget driven by the model: the
// server (a quota algorithm and its headers), a wire with latency, and a
// batch of calls from a fixed number of callers served in arrival order
// at the told pace and the model's decision. It runs in microseconds of
// real time, so the model can be tried on many servers quickly; the real
// budget over HTTP is judged by bench/matrix.

type simAlg int

const (
	simGCRA simAlg = iota
	simFixed
	simAnchored
	simSliding
)

func (a simAlg) String() string {
	return [...]string{"gcra", "fixed", "anchored", "sliding"}[a]
}

type simReset int

const (
	resetCeil   simReset = iota // delta seconds, rounded up
	resetEpoch                  // an epoch second, truncated
	resetMillis                 // exact
	resetNone
)

func (r simReset) String() string { return [...]string{"ceil", "epoch", "ms", "none"}[r] }

type simServer struct {
	alg        simAlg
	limit      int   // window limit, or the bucket's burst
	window     int64 // window length; a bucket's refill is limit per window... (see rate)
	interval   int64 // GCRA emission interval
	reset      simReset
	retryAfter bool
	epochPhase int64 // where the server's seconds start on our clock

	tat       int64
	start     int64 // current window start (fixed, anchored, sliding)
	used      int
	prev      int
	anchorSet bool
}

func (s *simServer) roll(t int64) {
	switch s.alg {
	case simFixed, simSliding:
		ws := t / s.window * s.window
		if ws > s.start || !s.anchorSet {
			s.prev = 0
			if ws-s.start == s.window && s.anchorSet {
				s.prev = s.used
			}
			s.start, s.used, s.anchorSet = ws, 0, true
		}
	case simAnchored:
		if !s.anchorSet || t >= s.start+s.window {
			s.start, s.used, s.anchorSet = t, 0, true
		}
	}
}

// take decides a request arriving at t: admitted, what remains, the reset
// and the wait (refused) as durations from t.
func (s *simServer) take(t int64) (ok bool, remaining int, reset, wait int64) {
	switch s.alg {
	case simGCRA:
		tau := int64(s.limit-1) * s.interval
		base := max(s.tat, t)
		if base-t > tau {
			return false, 0, base - t, base - t - tau
		}
		s.tat = base + s.interval
		ahead := s.tat - t
		if ahead > tau {
			return true, 0, ahead, 0
		}
		return true, int((tau-ahead)/s.interval) + 1, ahead, 0
	case simSliding:
		s.roll(t)
		e := t - s.start
		est := func(n int) float64 {
			return float64(s.prev)*float64(s.window-e)/float64(s.window) + float64(s.used+n)
		}
		end := s.start + s.window - t
		if est(1) <= float64(s.limit) {
			s.used++
			rem := int(math.Floor(float64(s.limit) - est(0)))
			return true, max(0, rem), end, 0
		}
		// when one fits: in the next window at the earliest as a bound
		return false, 0, end, end
	default:
		s.roll(t)
		end := s.start + s.window - t
		if s.used < s.limit {
			s.used++
			return true, s.limit - s.used, end, 0
		}
		return false, 0, end, end
	}
}

func ceilSec(d int64) int64 { return (d + Second - 1) / Second * Second }

// report is what the client reads of a decision, as Report fields.
func (s *simServer) report(ok bool, remaining int, reset, wait, decided, recv int64) Report {
	r := Report{Refused: !ok, Remaining: remaining, Limit: s.limit, Reset: -1}
	switch s.reset {
	case resetCeil:
		r.Reset = ceilSec(reset)
	case resetEpoch:
		abs := decided + reset - s.epochPhase
		r.Reset = abs/Second*Second + s.epochPhase - recv
		if r.Reset < 0 {
			r.Reset = 0
		}
	case resetMillis:
		r.Reset = (reset + 999_999) / 1_000_000 * 1_000_000
	}
	if !ok && s.retryAfter {
		r.Wait = ceilSec(wait)
	}
	return r
}

type simSetup struct {
	server   simServer
	calls    int
	callers  int
	owd      int64 // one-way delay
	jitter   int64
	told     int64 // told interval; 0: none
	burst    int64
	tries    int
	seed     uint64
	maxWait  int64
	serverPs float64 // the server's rate, per second (for the ideal)
}

type simResult struct {
	refused, sent  int
	blind          int // refused requests sent before the first answer came
	makespan       int64
	ideal          int64
	toldViolations int
}

func (r simResult) ratio() float64 { return float64(r.makespan) / float64(r.ideal) }
func (r simResult) pct() float64   { return 100 * float64(r.refused) / float64(max(1, r.sent)) }

type event struct {
	at   int64
	kind int // 0 wake, 1 arrive at server, 2 answer at client
	req  *simReq
	seq  int
}

type simReq struct {
	call    int
	tries   int
	sent    int64
	seqNo   uint64
	ok      bool
	rep     Report
	decided int64
}

type evq []event

func (q evq) Len() int { return len(q) }
func (q evq) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q evq) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *evq) Push(x any)   { *q = append(*q, x.(event)) }
func (q *evq) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func simulate(su simSetup) simResult {
	rng := rand.New(rand.NewPCG(su.seed, 7))
	m := New(Config{Interval: su.told, MaxWait: su.maxWait, Decrease: 0.5, MinRate: 0.1, Increase: 0.1})
	srv := su.server
	var q evq
	seq := 0
	push := func(e event) { seq++; e.seq = seq; heap.Push(&q, e) }
	// The told GCRA.
	tat := int64(math.MinInt64 / 2)
	burst := max(1, su.burst)
	var waiting []*simReq // FIFO of requests waiting for their turn
	next := 0             // next call to start
	done := 0
	var res simResult
	var quiet int64
	var sends []int64
	for range su.callers {
		if next < su.calls {
			waiting = append(waiting, &simReq{call: next})
			next++
		}
	}
	const start = 10 * Second // (0 reads as "none" to the model)
	now := int64(start)
	armed := int64(-1)
	firstAnswer := int64(0)
	dispatch := func() {
		for len(waiting) > 0 {
			if quiet == 0 {
				quiet = max(now, m.LastSent())
			}
			g := now
			if su.told > 0 {
				g = max(now, tat-(burst-1)*su.told)
			}
			if dbgSend != nil {
				dbgSend(&m, now)
			}
			at, _ := m.Next(now, 1, quiet)
			t := max(g, at)
			if t > now {
				if armed != t {
					armed = t
					push(event{at: t, kind: 0})
				}
				return
			}
			r := waiting[0]
			waiting = waiting[1:]
			if su.told > 0 {
				tat = max(tat, now) + su.told
			}
			r.sent = now
			m.Sent(now, 1)
			r.seqNo = m.sends.n
			if simTrace != nil {
				a, _ := m.Next(now, 1, now)
				simTrace("%8.3f send #%d call %d try %d  next1 %+.3f kind %v fresh{seq %d rem %d at %.3f} rate[%.1f,%.1f] turn[%.3f,%.3f] pause[%.3f,%.3f]", float64(now-start)/1e9, r.seqNo, r.call, r.tries, float64(a-now)/1e9, m.kind, m.fresh.seq, m.fresh.remaining, float64(m.fresh.at-start)/1e9, m.bucket.lo*1e9, m.bucket.hi*1e9, float64(m.win.lo-start)/1e9, float64(m.win.hi-start)/1e9, float64(m.pauseLo-start)/1e9, float64(m.pauseHi-start)/1e9)
			}
			sends = append(sends, now)
			quiet = 0
			if len(waiting) > 0 {
				quiet = now
			}
			d := su.owd + rng.Int64N(su.jitter+1)
			push(event{at: now + d, kind: 1, req: r})
		}
		quiet = 0
	}
	dispatch()
	for q.Len() > 0 && done < su.calls {
		e := heap.Pop(&q).(event)
		now = e.at
		switch e.kind {
		case 1:
			r := e.req
			ok, rem, reset, wait := srv.take(now)
			res.sent++
			if !ok {
				res.refused++
				if firstAnswer == 0 || r.sent < firstAnswer {
					res.blind++
				}
			}
			d := su.owd + rng.Int64N(su.jitter+1)
			r.ok, r.decided = ok, now
			decidedAt[r.seqNo] = now
			r.rep = srv.report(ok, rem, reset, wait, now, now+d)
			push(event{at: now + d, kind: 2, req: r})
			continue
		case 2:
			r := e.req
			if firstAnswer == 0 {
				firstAnswer = now
			}
			rep := r.rep
			rep.Sent, rep.Recv = r.sent, now
			if rep.Wait > 0 {
				rep.Wait = min(rep.Wait, su.maxWait)
			}
			m.Observe(rep)
			if simCheck != nil {
				simCheck(&m, now-start, r)
			}
			if simTrace != nil {
				a, _ := m.Next(now, 1, now)
				simTrace("%8.3f answer #%d ok=%v rem=%d reset=%.3f wait=%.3f (decided %.3f) next1 %+.3f kind %v fresh{seq %d rem %d} win[%.3f,%.3f,%.3f] E=%d", float64(now-start)/1e9, r.seqNo, r.ok, rep.Remaining, float64(rep.Reset)/1e9, float64(rep.Wait)/1e9, float64(r.decided-start)/1e9, float64(a-now)/1e9, m.kind, m.fresh.seq, m.fresh.remaining, float64(m.win.lo-start)/1e9, float64(m.win.stated-start)/1e9, float64(m.win.hi-start)/1e9, int64(m.fresh.remaining)-m.sends.since(m.fresh.seq))
			}
			r.tries++
			switch {
			case !r.ok && r.tries < su.tries:
				waiting = append([]*simReq{r}, waiting...) // its retry goes first
			default:
				done++
				if done == su.calls {
					res.makespan = now - start
				}
				if next < su.calls {
					waiting = append(waiting, &simReq{call: next})
					next++
				}
			}
		}
		dispatch()
	}
	if su.told > 0 {
		res.toldViolations = toldViolations(sends, su.told, burst)
	}
	return res
}

// toldViolations counts sends a GCRA at the told pace would have refused.
func toldViolations(sends []int64, interval, burst int64) int {
	tat, bad := int64(math.MinInt64/2), 0
	for _, s := range sends {
		if s < tat-(burst-1)*interval {
			bad++
			continue
		}
		tat = max(tat, s) + interval
	}
	return bad
}

func (su simSetup) String() string {
	s := su.server
	return fmt.Sprintf("%v limit=%d window=%v iv=%v reset=%v ra=%v owd=%v±%v told=%v burst=%d callers=%d",
		s.alg, s.limit, s.window/1e6, s.interval/1e6, s.reset, s.retryAfter, su.owd/1e6, su.jitter/1e6, su.told/1e6, su.burst, su.callers)
}

func TestSimExamples(t *testing.T) {
	ms := int64(1e6)
	base := []simSetup{
		{server: simServer{alg: simGCRA, limit: 10, interval: 10 * ms, window: Second, reset: resetCeil, retryAfter: true}, told: 10 * ms, burst: 10},
		{server: simServer{alg: simGCRA, limit: 10, interval: 10 * ms, window: Second, reset: resetCeil, retryAfter: true}, told: 5 * ms, burst: 20},
		{server: simServer{alg: simFixed, limit: 100, window: Second, reset: resetCeil, retryAfter: true}, told: 10 * ms, burst: 100},
		{server: simServer{alg: simFixed, limit: 100, window: Second, reset: resetEpoch, retryAfter: false}, told: 5 * ms, burst: 200},
		{server: simServer{alg: simAnchored, limit: 100, window: Second, reset: resetEpoch, retryAfter: false}, told: 5 * ms, burst: 200},
		{server: simServer{alg: simSliding, limit: 100, window: Second, reset: resetEpoch, retryAfter: true}, told: 5 * ms, burst: 200},
		{server: simServer{alg: simFixed, limit: 100, window: Second, reset: resetCeil, retryAfter: true}, told: 0},
		{server: simServer{alg: simGCRA, limit: 10, interval: 10 * ms, window: Second, reset: resetCeil, retryAfter: true}, told: 0},
	}
	for _, owd := range []int64{0, 30 * ms, 100 * ms} {
		for i, su := range base {
			if *onlyCase >= 0 && (i != *onlyCase || owd/ms != *onlyOwd) {
				continue
			}
			if *onlyCase >= 0 {
				simTrace = func(f string, a ...any) { t.Logf(f, a...) }
				defer func() { simTrace = nil }()
			}
			su.calls, su.callers, su.tries, su.maxWait, su.owd, su.jitter, su.seed = 500, 100, 6, 3600*Second, owd, owd/5, 1
			var rate float64
			if su.server.alg == simGCRA {
				rate = 1e9 / float64(su.server.interval)
			} else {
				rate = float64(su.server.limit) * 1e9 / float64(su.server.window)
			}
			burst := su.server.limit
			ideal := int64(float64(su.calls-burst)/rate*1e9) + 2*owd
			r := simulate(su)
			r.ideal = ideal
			t.Logf("%-90v 429s %5.1f%% (%4.1f%% after the first answer)  %.3f×  told-violations %d", su, r.pct(), 100*float64(r.refused-r.blind)/float64(r.sent), r.ratio(), r.toldViolations)
		}
	}
}

// simCheck, when set, is called after each answer.
var simCheck func(m *Model, at int64, r *simReq)

var decidedAt = map[uint64]int64{}

var dbgSend func(m *Model, now int64)

// simTrace, when set, prints each send and answer (a debugging aid).
var simTrace func(format string, a ...any)

var (
	onlyCase = flag.Int("case", -1, "trace one TestSimExamples case")
	onlyOwd  = flag.Int64("owd", 0, "its one-way delay, ms")
)

// The bucket's rate bounds hold the server's true rate whatever the
// order answers come in.
func TestSimRateBoundsHoldTheTruth(t *testing.T) {
	ms := int64(1e6)
	for _, owd := range []int64{0, 30 * ms, 100 * ms} {
		for _, told := range []int64{10 * ms, 5 * ms} {
			su := simSetup{server: simServer{alg: simGCRA, limit: 10, interval: 10 * ms, window: Second, reset: resetCeil, retryAfter: true},
				told: told, burst: 10 * (10 * ms / told), calls: 500, callers: 100, tries: 6, maxWait: 3600 * Second, owd: owd, jitter: owd / 5, seed: 1}
			bad := 0
			simCheck = func(m *Model, at int64, r *simReq) {
				if (m.bucket.lo*1e9 > 100.5 || m.bucket.hi*1e9 < 99.5) && bad < 3 {
					bad++
					t.Errorf("owd %v told %v: at %.3f after #%d the rate bounds are [%.1f, %.1f], the server's 100", owd/ms, told/ms, float64(at)/1e9, r.seqNo, m.bucket.lo*1e9, m.bucket.hi*1e9)
					if bad == 1 {
						for sq := r.seqNo - 30; sq <= m.sends.n && sq < r.seqNo+10; sq++ {
							k := sq % 512
							t.Logf("  #%d sent %.4f out %d back %.4f decided %.4f", sq, float64(m.sends.at[k])/1e9-10, m.sends.out[k], float64(m.sends.back[k])/1e9-10, float64(decidedAt[sq])/1e9-10)
						}
					}
				}
			}
			if owd == 100*ms && told == 5*ms {
				debugf = func(f string, a ...any) { t.Logf(f, a...) }
			}
			simulate(su)
			simCheck, debugf = nil, nil
		}
	}
}

// simDraw draws one server, wire and client from rng.
func simDraw(rng *rand.Rand) (simSetup, string) {
	ms := int64(1e6)
	var su simSetup
	alg := simAlg(rng.IntN(4))
	rate := 20 + rng.IntN(181) // per second
	su.server = simServer{alg: alg, reset: simReset(rng.IntN(4)), retryAfter: rng.IntN(2) == 0}
	switch alg {
	case simGCRA:
		su.server.interval = Second / int64(rate)
		su.server.limit = max(1, rate/(2+rng.IntN(19)))
		su.server.window = Second
	default:
		w := []int64{1, 1, 2, 5}[rng.IntN(4)] * Second
		su.server.window = w
		su.server.limit = max(2, int(int64(rate)*w/Second))
		rate = int(int64(su.server.limit) * Second / w)
	}
	su.server.epochPhase = rng.Int64N(Second)
	su.owd = rng.Int64N(151) * ms
	su.jitter = rng.Int64N(su.owd/4 + 1)
	su.callers = 20 + rng.IntN(81)
	su.calls = 300 + rng.IntN(301)
	su.tries, su.maxWait, su.seed = 6, 3600*Second, rng.Uint64()
	told := []string{"exact", "2x", "half", "none"}[rng.IntN(4)]
	f := map[string]float64{"exact": 1, "2x": 2, "half": 0.5, "none": 0}[told]
	if f > 0 {
		su.told = int64(float64(Second) / (float64(rate) * f))
		su.burst = max(1, int64(math.Round(float64(su.server.limit)*f)))
	}
	su.serverPs = float64(rate)
	return su, told
}

// simIdeal is the least makespan any client reaches: the server's pace
// for the batch past its first burst, plus a round trip; told half the
// rate, the told pace.
func simIdeal(su simSetup) int64 {
	rate := su.serverPs
	if su.told > 0 {
		rate = min(rate, float64(Second)/float64(su.told))
	}
	n := float64(su.calls - su.server.limit)
	if su.told > 0 && float64(Second)/float64(su.told) < su.serverPs {
		n = float64(su.calls) - float64(su.burst)
	}
	ideal := int64(max(0, n)/rate*1e9) + 2*su.owd
	// (Each caller has one call out at a time: a round trip each.)
	return max(ideal, int64(su.calls/su.callers)*2*su.owd)
}

var (
	simDraws = flag.Int("draws", 0, "TestSimFamily: draws (0: skip)")
	simSeed  = flag.Uint64("seed", 0, "TestSimFamily: the seed (0: a fresh one)")
	simOnly  = flag.String("only", "", "TestSimFamily: list the draws of this class (told/alg)")
	simTr    = flag.Int("trace", -1, "TestSimFamily: trace this draw")
)

func TestSimFamily(t *testing.T) {
	if *simDraws == 0 {
		t.Skip("-draws N to run")
	}
	seed := *simSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	type row struct {
		su         simSetup
		told       string
		pct, ratio float64
	}
	by := map[string][]row{}
	for d := range *simDraws {
		su, told := simDraw(rng)
		if d == *simTr {
			simTrace = func(f string, a ...any) { t.Logf(f, a...) }
		}
		r := simulate(su)
		simTrace = nil
		r.ideal = simIdeal(su)
		key := told + "/" + su.server.alg.String()
		if key == *simOnly {
			t.Logf("draw %d: %v → %.1f%% (%.1f%% blind) %.3f×", d, su, r.pct(), 100*float64(r.blind)/float64(r.sent), r.ratio())
		}
		by[key] = append(by[key], row{su, told, r.pct(), r.ratio()})
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		rows := by[k]
		pcts, ratios := make([]float64, len(rows)), make([]float64, len(rows))
		for i, r := range rows {
			pcts[i], ratios[i] = r.pct, r.ratio
		}
		slices.Sort(pcts)
		slices.Sort(ratios)
		q := func(v []float64, p float64) float64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
		t.Logf("%-16s n=%3d  429s p50 %5.1f%% p95 %5.1f%% max %5.1f%%   ratio p50 %.3f p95 %.3f max %.3f", k, len(rows), q(pcts, .5), q(pcts, .95), pcts[len(pcts)-1], q(ratios, .5), q(ratios, .95), ratios[len(ratios)-1])
		worst := slices.MaxFunc(rows, func(a, b row) int { return cmp.Compare(a.pct+10*a.ratio, b.pct+10*b.ratio) })
		t.Logf("    worst: %v → %.1f%% %.3f×", worst.su, worst.pct, worst.ratio)
	}
}
