package core_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core"
)

// No server can stall a budget past WithMaxPause. A seeded hostile server
// answers eight callers, sending continuously through one Transport, with
// rate-limit headers drawn at random — Retry-After from junk to an hour,
// Remaining 0 with far or malformed resets, IETF fields out of range,
// X-RateLimit-* nonsense — mixed with clean 200s, then turns honest and
// generous. What must hold whatever it said:
//
//   - while callers wait, no stretch without a request sent is longer than
//     WithMaxPause plus one interval of the configured pace (the silence):
//     each wait a response causes is capped, and so is their sum;
//   - once the last hostile response's effect is over (its time plus that
//     bound), the budget sends at the configured rate at once;
//   - no send breaks the configured rate and burst, nothing panics, every slot
//     comes back (InFlight 0) and no goroutine is left (synctest.Test
//     fails on one left blocked).

var (
	hostileSeed = flag.Uint64("hostile.seed", 0, "TestHostileHeadersBoundedStall's base seed (0: a fresh one); run i uses base+i")
	hostileRuns = flag.Int("hostile.runs", 100, "how many seeds TestHostileHeadersBoundedStall runs")
)

const (
	hostileRate     = 200
	hostileBurst    = 20
	hostileCallers  = 8
	hostileSlots    = 16
	hostileMaxPause = 2 * time.Second
	hostileInterval = time.Second / hostileRate
	// hostileBound is the longest silence allowed while callers wait.
	hostileBound = hostileMaxPause + hostileInterval
	// hostileLatency bounds the server's answer time: well within the
	// interval, so a silence past the bound is the budget's, not the
	// round trip's.
	hostileLatency = time.Millisecond
	// hostileFor is how long the seeded server stays hostile.
	hostileFor = 8 * time.Second
	// hostileCleanShare is the least share of the configured rate sent in
	// the clean second.
	hostileCleanShare = 0.95
)

func TestHostileHeadersBoundedStall(t *testing.T) {
	t.Parallel()
	base := *hostileSeed
	if base == 0 {
		base = rand.Uint64() >> 1
	}
	t.Logf("base seed %d (replay: -hostile.seed=%d; one run i: -hostile.seed=<base+i> -hostile.runs=1)", base, base)
	var (
		failed, stalled, slow int
		worst                 time.Duration
		worstAt               uint64
		slowest               = hostileRate + 1
		slowAt                uint64
		failures              []string
	)
	for i := range *hostileRuns {
		seed := base + uint64(i)
		var res hostileResult
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 0x68676174)) // "hgat"
				share := 0.01 + 0.5*rng.Float64()              // how often the server is hostile
				start := time.Now()
				res = runHostile(t, func(now time.Time) (int, http.Header, time.Duration, bool) {
					lat := time.Duration(rng.Int64N(int64(hostileLatency)))
					if now.Sub(start) >= hostileFor {
						return 0, nil, lat, false
					}
					if rng.Float64() >= share {
						status, h := cleanResponse(rng)
						return status, h, lat, true
					}
					status, h := hostileResponse(rng, now)
					return status, h, lat, true
				}, time.Second)
				res.check(t)
			})
		})
		if res.silence > worst {
			worst, worstAt = res.silence, seed
		}
		if res.clean < slowest {
			slowest, slowAt = res.clean, seed
		}
		if res.silence > hostileBound {
			stalled++
		}
		if res.clean < int(hostileRate*hostileCleanShare) {
			slow++
		}
		if !ok {
			failed++
			failures = append(failures, fmt.Sprintf("%d (%v at %v; %d sent in the clean second)", seed, res.silence, res.silenceAt, res.clean))
		}
	}
	t.Logf("%d of %d seeds failed: %d stalled past %v, %d below %d/s in the clean second; worst silence %v (seed %d); fewest sends in the clean second %d (seed %d)",
		failed, *hostileRuns, stalled, hostileBound, slow, int(hostileRate*hostileCleanShare), worst, worstAt, slowest, slowAt)
	if failed > 0 {
		t.Errorf("failing seeds: %s", strings.Join(failures, ", "))
	}
}

// hostileScript answers a request that arrives at now: its status and
// headers, the latency before the answer, and whether the server is still
// in its hostile phase (false: it has turned honest, and the status and
// headers are ignored).
type hostileScript func(now time.Time) (status int, h http.Header, latency time.Duration, hostile bool)

// hostileResult is what one run measured, relative to its start.
type hostileResult struct {
	silence    time.Duration // the longest stretch with no send while a caller waited
	silenceAt  time.Duration // where it began
	cut        bool          // the silence lasted until the run was cut short, a minute after its start
	sends      int
	effectEnd  time.Duration // the last hostile answer plus hostileBound
	clean      int           // sends in the second from effectEnd
	tooFast    string        // the first breach of the configured rate and burst, or ""
	inFlight   int           // after every caller returned
	unexpected []string      // call errors other than the run's end
	scripted   int           // answers the script gave
}

// check reports every property the run broke.
func (r hostileResult) check(t *testing.T) {
	t.Helper()
	r.checkBounded(t)
	if want := int(hostileRate * hostileCleanShare); r.clean < want {
		t.Errorf("%d sent in the second from %v (the last hostile answer's effect over); want at least %d at %d/s",
			r.clean, r.effectEnd, want, hostileRate)
	}
	t.Logf("%d sends (%d answered with the script), longest silence %v at %v, %d sent in the clean second from %v",
		r.sends, r.scripted, r.silence, r.silenceAt, r.clean, r.effectEnd)
}

// checkBounded reports a broken bound: the silence, the configured rate and
// burst, a leaked slot, a failed call.
func (r hostileResult) checkBounded(t *testing.T) {
	t.Helper()
	if r.silence > hostileBound {
		more := ""
		if r.cut {
			more = " (and on: the run was cut short a minute after its start)"
		}
		t.Errorf("no request sent for %v from %v%s while callers waited; want at most %v (WithMaxPause + one interval)",
			r.silence, r.silenceAt, more, hostileBound)
	}
	if r.tooFast != "" {
		t.Errorf("the sends break the configured rate and burst: %s", r.tooFast)
	}
	if r.inFlight != 0 {
		t.Errorf("InFlight = %d after every caller returned; want 0", r.inFlight)
	}
	for _, e := range r.unexpected {
		t.Errorf("a call failed: %s", e)
	}
}

// hostileCall is one call: when its caller began waiting, when it reached
// the server (if it did), when the call returned.
type hostileCall struct {
	start, sent, end time.Time
	wasSent          bool
}

type callKey struct{}

// hostileServer is an in-process http.RoundTripper that answers by its
// script until the script turns honest, and then with a generous quota
// report. It records every call.
type hostileServer struct {
	script hostileScript

	mu          sync.Mutex
	calls       []hostileCall
	turned      bool      // the script has turned honest
	lastHostile time.Time // when the last scripted answer came
	scripted    int       // answers the script gave
}

func (s *hostileServer) begin() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, hostileCall{start: time.Now()})
	return len(s.calls) - 1
}

func (s *hostileServer) end(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[i].end = time.Now()
}

func (s *hostileServer) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	s.mu.Lock()
	if i, ok := req.Context().Value(callKey{}).(int); ok {
		s.calls[i].sent, s.calls[i].wasSent = now, true
	}
	status, h, latency, hostile := s.script(now)
	if !hostile {
		s.turned = true
	}
	hostile = hostile && !s.turned // once honest, for good
	s.mu.Unlock()
	if !hostile {
		status, h = http.StatusOK, http.Header{}
		h.Set("X-RateLimit-Limit", "10000")
		h.Set("X-RateLimit-Remaining", "9000")
		h.Set("X-RateLimit-Reset", "1")
	}
	t := time.NewTimer(latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	if hostile {
		s.mu.Lock()
		s.lastHostile = time.Now()
		s.scripted++
		s.mu.Unlock()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader("{}")), ContentLength: 2, Request: req,
	}, nil
}

// runHostile runs eight callers through one budget (200/s, burst 20,
// WithMaxPause(2s), WithMaxInFlight(16)) against a server answering by
// script, until clean has passed after the last scripted answer's effect
// is over (and a request has gone since); it must run inside a synctest
// bubble.
func runHostile(t *testing.T, script hostileScript, clean time.Duration) hostileResult {
	t.Helper()
	start := time.Now()
	srv := &hostileServer{script: script}
	b := core.MustBudget(core.PerSecond(hostileRate), core.WithBurst(hostileBurst),
		core.WithMaxPause(hostileMaxPause), core.WithMaxInFlight(hostileSlots))
	c := &http.Client{Transport: core.NewTransport(srv, b)}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	var wg sync.WaitGroup
	var errMu sync.Mutex
	var unexpected []string
	for range hostileCallers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := srv.begin()
				req, _ := http.NewRequestWithContext(context.WithValue(ctx, callKey{}, i), http.MethodGet, "http://api.test/v1/items", nil)
				resp, err := c.Do(req)
				srv.end(i)
				if err != nil {
					if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
						errMu.Lock()
						unexpected = append(unexpected, fmt.Sprintf("at %v: %v", time.Since(start), err))
						errMu.Unlock()
					}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	// The run ends clean (and a margin) after the last scripted answer's
	// effect is over, or at the latest a minute after the start.
	var stopAt time.Time
	cut := false
	for {
		time.Sleep(100 * time.Millisecond)
		srv.mu.Lock()
		turned, last := srv.turned, srv.lastHostile
		srv.mu.Unlock()
		if last.IsZero() {
			last = start
		}
		stopAt = last.Add(hostileBound + clean + 100*time.Millisecond)
		if turned && !time.Now().Before(stopAt) {
			break
		}
		if time.Since(start) >= time.Minute {
			cut = true
			break
		}
	}
	stopAt = time.Now()
	stop()
	wg.Wait()

	srv.mu.Lock()
	defer srv.mu.Unlock()
	r := hostileResult{inFlight: b.InFlight(), unexpected: unexpected, scripted: srv.scripted}
	last := srv.lastHostile
	if last.IsZero() {
		last = start
	}
	effectEnd := last.Add(hostileBound)
	r.effectEnd = effectEnd.Sub(start)
	var sends []time.Time
	var waits [][2]time.Time
	for _, c := range srv.calls {
		end := c.end
		if c.wasSent {
			sends = append(sends, c.sent)
			end = c.sent
		}
		if end.IsZero() || end.After(stopAt) {
			end = stopAt
		}
		if end.After(c.start) {
			waits = append(waits, [2]time.Time{c.start, end})
		}
	}
	slices.SortFunc(sends, func(a, b time.Time) int { return a.Compare(b) })
	r.sends = len(sends)
	for _, s := range sends {
		if !s.Before(effectEnd) && s.Before(effectEnd.Add(time.Second)) {
			r.clean++
		}
	}
	var at time.Time
	r.silence, at = longestSilence(waits, sends)
	r.silenceAt = at.Sub(start)
	r.cut = cut && !at.Add(r.silence).Before(stopAt)
	r.tooFast = configuredBreach(sends, start)
	return r
}

// longestSilence returns the longest stretch with no send in which some
// caller waits throughout (the union of the waits, cut at every send), and
// where it began.
func longestSilence(waits [][2]time.Time, sends []time.Time) (time.Duration, time.Time) {
	slices.SortFunc(waits, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var longest time.Duration
	var at time.Time
	cut := func(from, to time.Time) {
		i, _ := slices.BinarySearchFunc(sends, from, func(s, t time.Time) int { return s.Compare(t) })
		for ; i < len(sends) && sends[i].Before(to); i++ {
			if d := sends[i].Sub(from); d > longest {
				longest, at = d, from
			}
			from = sends[i]
		}
		if d := to.Sub(from); d > longest {
			longest, at = d, from
		}
	}
	for i := 0; i < len(waits); {
		from, to := waits[i][0], waits[i][1]
		for i++; i < len(waits) && !waits[i][0].After(to); i++ {
			if waits[i][1].After(to) {
				to = waits[i][1]
			}
		}
		cut(from, to)
	}
	return longest, at
}

// configuredBreach checks the sends against the configured rate and burst (GCRA at
// 200/s, burst 20: no window holds more than burst + its length over the
// interval) and describes the first send that breaks it, or returns "".
func configuredBreach(sends []time.Time, start time.Time) string {
	interval, tau := int64(hostileInterval), int64(hostileBurst-1)*int64(hostileInterval)
	tat := int64(-1 << 62)
	for i, s := range sends {
		at := s.Sub(start).Nanoseconds()
		if at < tat-tau {
			return fmt.Sprintf("send %d at %v is %v early", i, time.Duration(at), time.Duration(tat-tau-at))
		}
		tat = max(tat, at) + interval
	}
	return ""
}
