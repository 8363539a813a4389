package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate-go/headgate/core"
)

// Cell is one server, scenario and client.
type Cell struct {
	Server   ServerSpec
	Scenario Scenario
	Client   ClientSpec
}

// Env is what cells run with.
type Env struct {
	Workload  Workload
	InProcess bool          // serve quotatest in-process (for testing/synctest) instead of over loopback
	RedisAddr string        // a redis-server for redis_rate; "" skips its cells
	Slack     time.Duration // scheduling noise allowed when checking the configured rate: 0 in synctest
	Trace     io.Writer     // if set, each cell's per-request trace is written to it (trace.go)
	Latency   time.Duration // the wire's latency each way between the clients and the server (wire.go); 0: none added
	traceMu   sync.Mutex
	key       atomic.Int64 // numbers the instances that share the redis
}

// Run sends one cell's batch and measures it. A cell that cannot run here
// (no redis, a network-only server in-process) comes back with Skipped set and no error.
func (env *Env) Run(ctx context.Context, c Cell) (Result, error) {
	w := env.Workload
	res := Result{Server: c.Server.Name, Scenario: c.Scenario.Name, Client: c.Client.Name, Calls: w.N}
	if env.InProcess && !c.Server.InProcess {
		res.Skipped = "loopback only"
		return res, nil
	}
	srv, err := c.Server.start(serverEnv{
		w: w, pause: c.Scenario.Pause, inProcess: env.InProcess, redisAddr: env.RedisAddr,
		key: fmt.Sprintf("matrix:%d", env.key.Add(1)),
	})
	if errors.Is(err, errNoRedis) {
		res.Skipped = "no redis-server"
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", c.Server.Name, err)
	}
	defer srv.Close()

	serverBurst := c.Server.Burst(w)
	configuredRate, configuredBurst := c.Scenario.configured(w.Rate, serverBurst)
	seen := newClientSide(withLatency(srv.Base, env.Latency))
	seen.trace = env.Trace != nil
	cl, err := c.Client.build(clientEnv{
		url: srv.URL, rate: configuredRate, burst: configuredBurst, learn: c.Scenario.Learn, tries: w.MaxTries, base: seen,
		inFlight: maxInFlight, observer: seen.heard,
	})
	if err != nil {
		return res, fmt.Errorf("%s: %w", c.Client.Name, err)
	}

	res.Ideal = ideal(w.N, w.Rate, serverBurst)
	if c.Scenario.Factor < 1 { // never faster than configured: the configured limit's ideal
		res.Ideal = ideal(w.N, configuredRate, configuredBurst)
	}
	if c.Scenario.Pause {
		res.Ideal += w.Pause
	}

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	if srv.Sliding != nil && c.Scenario.Factor >= 1 {
		res.Phase = srv.Sliding.phase(start)
		res.Floor = srv.Sliding.floor(w, res.Phase, c.Scenario.Pause)
	}
	for range w.Workers {
		wg.Go(func() {
			for id := int(next.Add(1)); id <= w.N; id = int(next.Add(1)) {
				if cl.call(ctx, id) != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res.Makespan = time.Since(start)
	res.Failed = int(failed.Load())
	if cl.budget != nil {
		res.Leaked = cl.budget.InFlight()
	}
	arrivals, pauseAt := srv.Arrivals()
	res.measure(arrivals, pauseAt, seen, w.Pause, configuredRate, configuredBurst, env.Slack)
	if env.Trace != nil {
		env.traceMu.Lock()
		writeTrace(env.Trace, res.Scenario+" · "+res.Server+" · "+res.Client+" · "+res.Figures(), start, seen.tries, arrivals)
		env.traceMu.Unlock()
	}
	return res, nil
}

// clientSide is what the clients send through: the server's transport,
// noting when each call's tries were sent and when each refusal reached
// the client — and, for a headgate client, when its budget reported a
// refusal's wait (heard) — so that a request counts as sent into a known
// pause only if it was sent once the client could know of it.
type clientSide struct {
	base      http.RoundTripper
	mu        sync.Mutex
	sends     map[int][]time.Time // by call, in order; guarded by mu
	refusals  []time.Time         // when each refusal was received; guarded by mu
	pushbacks []time.Time         // when the budget reported each refusal's wait; guarded by mu
	trace     bool                // record every try (tries)
	tries     []try               // guarded by mu
}

func newClientSide(base http.RoundTripper) *clientSide {
	return &clientSide{base: base, sends: make(map[int][]time.Time)}
}

func (s *clientSide) RoundTrip(req *http.Request) (*http.Response, error) {
	call := callOf(req.URL.Path)
	sent := time.Now()
	s.mu.Lock()
	s.sends[call] = append(s.sends[call], sent)
	s.mu.Unlock()
	resp, err := s.base.RoundTrip(req)
	if s.trace {
		t := try{call: call, sent: sent, recv: time.Now()}
		if err == nil {
			t.status, t.headers = resp.StatusCode, headersOf(resp.Header)
		}
		s.mu.Lock()
		s.tries = append(s.tries, t)
		s.mu.Unlock()
	}
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		now := time.Now()
		s.mu.Lock()
		s.refusals = append(s.refusals, now)
		s.mu.Unlock()
	}
	return resp, err
}

// firstRefusalSince is when the first refusal at or after t reached the
// client, or zero.
func (s *clientSide) firstRefusalSince(t time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for _, at := range s.refusals {
		if !at.Before(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// heard is a headgate client's budget's observer: it notes, for the trace,
// each change of the budget's rate, and when the budget
// reported a refusal's wait (a Pushback), which it does at once after
// applying it (Budget.apply emits its events as it unlocks). Until then
// the budget cannot know of the pause: a refusal that reached the
// transport has yet to be read and applied, and on a loaded machine the
// goroutine that received it may wait a while for a CPU — while others,
// granted their turns before, put their requests on the wire.
func (s *clientSide) heard(e core.Event) {
	if e.Reason == core.RateChanged && s.trace { // a line of the trace
		now := time.Now()
		s.mu.Lock()
		s.tries = append(s.tries, try{sent: now, recv: now, note: fmt.Sprintf("rate %.3f -> %.3f/s", e.OldRate, e.NewRate)})
		s.mu.Unlock()
		return
	}
	if e.Reason != core.Pushback || !refusal(e.Status) {
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.pushbacks = append(s.pushbacks, now)
	s.mu.Unlock()
}

// firstPushbackSince is when the budget first reported a refusal's wait at
// or after t, or zero (none reported, or not a headgate client).
func (s *clientSide) firstPushbackSince(t time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for _, at := range s.pushbacks {
		if !at.Before(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// sentFor is when the try of call that arrived at arrived was sent: the
// last send of the call at or before it (a call's tries never overlap), or
// zero if none was seen.
func (s *clientSide) sentFor(call int, arrived time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sent time.Time
	for _, at := range s.sends[call] {
		if !at.After(arrived) {
			sent = at
		}
	}
	return sent
}

// Cells returns every cell of servers × scenarios × clients, scenario
// first, then server, then client: the tables' order.
func Cells(servers []ServerSpec, scenarios []Scenario, clients []ClientSpec) []Cell {
	var cells []Cell
	for _, sc := range scenarios {
		for _, s := range servers {
			for _, c := range clients {
				cells = append(cells, Cell{Server: s, Scenario: sc, Client: c})
			}
		}
	}
	return cells
}

// RunAll runs cells, parallel at a time, each on its own server, and
// returns their results in the cells' order. progress, if set, is called
// after each cell.
func (env *Env) RunAll(ctx context.Context, cells []Cell, parallel int, progress func(done int, r Result)) ([]Result, error) {
	results := make([]Result, len(cells))
	errs := make([]error, len(cells))
	sem := make(chan struct{}, max(1, parallel))
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for i, c := range cells {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], errs[i] = env.Run(ctx, c)
			if progress != nil {
				mu.Lock()
				done++
				progress(done, results[i])
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}
