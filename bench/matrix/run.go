package matrix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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
	Slack     time.Duration // scheduling noise allowed when checking the told rate: 0 in synctest
	key       atomic.Int64  // numbers the instances that share the redis
}

// Run sends one cell's batch and measures it. A cell that cannot run here
// (a learning budget core does not have yet, no redis, a network-only
// server in-process) comes back with Skipped set and no error.
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
	toldRate, toldBurst := c.Scenario.told(w.Rate, serverBurst)
	cl, err := c.Client.build(clientEnv{
		url: srv.URL, rate: toldRate, burst: toldBurst, learn: c.Scenario.Learn, tries: w.MaxTries, base: srv.Base,
	})
	if errors.Is(err, ErrNoLearningBudget) {
		res.Skipped = err.Error()
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", c.Client.Name, err)
	}

	res.Ideal = ideal(w.N, w.Rate, serverBurst)
	if c.Scenario.Factor < 1 { // never faster than told: the told limit's ideal
		res.Ideal = ideal(w.N, toldRate, toldBurst)
	}
	if c.Scenario.Pause {
		res.Ideal += w.Pause
	}

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range w.Workers {
		wg.Go(func() {
			for id := int(next.Add(1)); id <= w.N; id = int(next.Add(1)) {
				if !cl.call(ctx, id) {
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
	res.measure(arrivals, pauseAt, w.Pause, toldRate, toldBurst, env.Slack)
	return res, nil
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
