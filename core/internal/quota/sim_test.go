package quota_test

import (
	"container/heap"
	"flag"
	"fmt"
	"github.com/headgate-go/headgate/core/internal/quota"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A small discrete-event simulation of a budget driven by the model: the
// server (a quota algorithm and its headers), a wire with latency, and a
// batch of calls from a fixed number of callers served in arrival order
// at the configured pace and the model's decision. It runs in microseconds of
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

func ceilSec(d int64) int64 { return (d + quota.Second - 1) / quota.Second * quota.Second }

// report is what the client reads of a decision, as Report fields.
func (s *simServer) report(ok bool, remaining int, reset, wait, decided, recv int64) quota.Report {
	r := quota.Report{Refused: !ok, Remaining: remaining, Limit: s.limit, Reset: -1}
	switch s.reset {
	case resetCeil:
		r.Reset = ceilSec(reset)
	case resetEpoch:
		abs := decided + reset - s.epochPhase
		r.Reset = abs/quota.Second*quota.Second + s.epochPhase - recv
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
	interval int64 // the configured interval; 0: none
	burst    int64
	tries    int
	seed     uint64
	maxWait  int64
	serverPs float64              // the server's rate, per second (for the ideal)
	check    func(m *quota.Model) // called after each answer
}

type simResult struct {
	done           int   // calls done
	silence        int64 // the longest stretch without a send while callers waited
	refused, sent  int
	blind          int // refused requests sent before the first answer came
	makespan       int64
	gcraViolations int
}

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
	ok      bool
	rep     quota.Report
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
	m := quota.New(quota.Config{Interval: su.interval, Burst: su.burst, MaxWait: su.maxWait, Decrease: 0.5, MinRate: 0.1, Increase: 0.1})
	m.ExpectAnswers()
	srv := su.server
	var q evq
	seq := 0
	push := func(e event) { seq++; e.seq = seq; heap.Push(&q, e) }
	// The configured GCRA.
	tat := int64(math.MinInt64 / 2)
	burst := max(1, su.burst)
	var waiting []*simReq // FIFO of requests waiting for their turn
	next := 0             // next call to start
	done := 0
	var res simResult
	var quiet int64
	var sends []int64
	var waitFrom int64 // when the callers began to wait
	for range su.callers {
		if next < su.calls {
			waiting = append(waiting, &simReq{call: next})
			next++
		}
	}
	const start = 10 * quota.Second // (0 reads as "none" to the model)
	now := int64(start)
	armed := int64(-1)
	firstAnswer := int64(0)
	dispatch := func() {
		for len(waiting) > 0 {
			if quiet == 0 {
				quiet = max(now, m.LastSent())
			}
			g := now
			if su.interval > 0 {
				g = max(now, tat-(burst-1)*su.interval)
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
			if su.interval > 0 {
				tat = max(tat, now) + su.interval
			}
			r.sent = now
			m.Sent(now, 1)
			if len(sends) > 0 {
				res.silence = max(res.silence, now-max(sends[len(sends)-1], waitFrom))
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
			if su.check != nil {
				su.check(&m)
			}
			r.tries++
			switch {
			case !r.ok && r.tries < su.tries:
				if len(waiting) == 0 {
					waitFrom = now
				}
				waiting = append([]*simReq{r}, waiting...) // its retry goes first
			default:
				done++
				res.done = done
				if done == su.calls {
					res.makespan = now - start
				}
				if next < su.calls {
					if len(waiting) == 0 {
						waitFrom = now
					}
					waiting = append(waiting, &simReq{call: next})
					next++
				}
			}
		}
		dispatch()
	}
	if su.interval > 0 {
		res.gcraViolations = gcraViolations(sends, su.interval, burst)
	}
	return res
}

// gcraViolations counts sends a GCRA at the configured pace would have refused.
func gcraViolations(sends []int64, interval, burst int64) int {
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
	return fmt.Sprintf("%v limit=%d window=%v iv=%v reset=%v ra=%v owd=%v±%v configured=%v burst=%d callers=%d",
		s.alg, s.limit, s.window/1e6, s.interval/1e6, s.reset, s.retryAfter, su.owd/1e6, su.jitter/1e6, su.interval/1e6, su.burst, su.callers)
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
		su.server.interval = quota.Second / int64(rate)
		su.server.limit = max(1, rate/(2+rng.IntN(19)))
		su.server.window = quota.Second
	default:
		w := []int64{1, 1, 2, 5}[rng.IntN(4)] * quota.Second
		su.server.window = w
		su.server.limit = max(2, int(int64(rate)*w/quota.Second))
		rate = int(int64(su.server.limit) * quota.Second / w)
	}
	su.server.epochPhase = rng.Int64N(quota.Second)
	su.owd = rng.Int64N(151) * ms
	su.jitter = rng.Int64N(su.owd/4 + 1)
	su.callers = 20 + rng.IntN(81)
	su.calls = 300 + rng.IntN(301)
	su.tries, su.maxWait, su.seed = 6, 3600*quota.Second, rng.Uint64()
	class := []string{"exact", "2x", "half", "none"}[rng.IntN(4)]
	f := map[string]float64{"exact": 1, "2x": 2, "half": 0.5, "none": 0}[class]
	if f > 0 {
		su.interval = int64(float64(quota.Second) / (float64(rate) * f))
		su.burst = max(1, int64(math.Round(float64(su.server.limit)*f)))
	}
	su.serverPs = float64(rate)
	return su, class
}

// simSeed replays TestSim* draws: 0 draws a fresh seed (printed).
var simSeed = flag.Uint64("sim.seed", 0, "TestSimRateBoundsHoldTheTruth and TestSimNeverStalls: the seed (0: a fresh one)")

func seedOf(t *testing.T) uint64 {
	s := *simSeed
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay: -sim.seed=%d)", s, s)
	return s
}

// The bucket's rate bounds hold the server's true rate, whatever the wire
// does to the order of the decisions and the answers: a GCRA server at a
// random rate and burst, configured with the exact rate or twice it, over a random
// latency with jitter.
func TestSimRateBoundsHoldTheTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedOf(t), 2))
	ms := int64(1e6)
	for k := range 40 {
		rate := 20 + rng.IntN(181)
		iv := quota.Second / int64(rate)
		limit := 1 + rng.IntN(30)
		interval := iv / int64(1+rng.IntN(2))
		owd := rng.Int64N(151) * ms
		su := simSetup{server: simServer{alg: simGCRA, limit: limit, interval: iv, window: quota.Second, reset: simReset(rng.IntN(4)), retryAfter: rng.IntN(2) == 0},
			interval: interval, burst: int64(limit) * iv / interval, calls: 300, callers: 50, tries: 6, maxWait: 3600 * quota.Second,
			owd: owd, jitter: rng.Int64N(owd/2 + 1), seed: rng.Uint64()}
		truth := float64(quota.Second) / float64(iv)
		bad := false
		su.check = func(m *quota.Model) {
			if lo, hi := m.RateBounds(); !bad && (lo > truth*1.001 || hi < truth*0.999) {
				bad = true
				t.Errorf("draw %d (%v): the rate bounds are [%.2f, %.2f], the server's %.2f", k, su, lo, hi, truth)
			}
		}
		simulate(su)
	}
}

// No server stalls the model: on random servers, wires and configured rates,
// every batch ends, and while callers wait a request goes at least every
// 30 s (windows are 5 s at most; a decision that never comes would hold
// the callers MaxWait, an hour here).
func TestSimNeverStalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedOf(t), 3))
	for k := range 300 {
		su, _ := simDraw(rng)
		r := simulate(su)
		if r.done < su.calls || r.silence > 30*quota.Second {
			t.Errorf("draw %d (%v): %d of %d calls done; %v without a request sent while callers waited", k, su, r.done, su.calls, time.Duration(r.silence))
		}
		if r.gcraViolations > 0 {
			t.Errorf("draw %d (%v): %d sends broke the configured pace", k, su, r.gcraViolations)
		}
	}
}
