package redisstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/redis/go-redis/v9"
)

// The fleet tests run several OS processes: each is this test binary,
// re-executed with helperEnv set, so TestMain runs helperMain instead of
// the tests. Parameters travel in HG_* variables; a helper prints its
// report as one JSON line on stdout.
const helperEnv = "HGREDIS_HELPER"

// fleetReport is what a "fleet" helper prints.
type fleetReport struct {
	OK, Refused, Errors int
	FirstError          string
	Sends               []int64 // when each request was handed to the network, Unix ns
	Tokens              []int64 // "tokens" mode: the tokens of each send
	// Turns are the turns the store granted and the budget kept (not
	// given back), on Redis's clock: the tests check the bounds on these,
	// exactly, as a loaded machine cannot move them. "tokens" mode: the
	// turn of each send, in the order of Sends.
	Turns []turnRec
	// Paused is, for a helper that heard a pause, when (Unix ns, its
	// clock) its store's Report returned with the pause in Redis.
	Paused int64
}

// turnRec is a granted turn, as a helper reports it.
type turnRec struct {
	At, Wait int64
	Factor   float64
	Fallback string // why the store answered from its fallback; "" from Redis
}

func recOf(t core.Turn) turnRec {
	r := turnRec{At: t.At, Wait: int64(t.Wait), Factor: t.Factor}
	if t.Fallback != nil {
		r.Fallback = t.Fallback.Error()
	}
	return r
}

func (r turnRec) turn() core.Turn {
	t := core.Turn{Granted: true, At: r.At, Wait: time.Duration(r.Wait), Factor: r.Factor}
	if r.Fallback != "" {
		t.Fallback = errors.New(r.Fallback)
	}
	return t
}

// sendClock records when each request leaves the budget's transport.
type sendClock struct {
	mu    sync.Mutex
	sends []int64
}

func (c *sendClock) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.sends = append(c.sends, time.Now().UnixNano())
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// generousTimeout is the helpers' Redis timeout, but for the fail-open
// helper's, which is its test's subject: as newStore's, a loaded machine
// (four helpers, Redis and the race detector on two CPUs) can hold a call
// past DefaultTimeout, and one such call takes the store down for its
// probe interval — the process's calls fail for it (TestFleetOfFourProcessesSpendsOneBudget,
// once in three runs under load), in a test about something else.
var generousTimeout = WithTimeout(5 * time.Second)

func helperMain(mode string) int {
	env := func(k string) string { return os.Getenv("HG_" + k) }
	atoi := func(k string) int { n, _ := strconv.Atoi(env(k)); return n }
	client := redis.NewClient(&redis.Options{Addr: env("ADDR"), ContextTimeoutEnabled: true})
	defer client.Close()
	switch mode {
	case "fleet":
		return fleetHelper(client, env, atoi)
	case "lease":
		return leaseHelper(client, env, atoi)
	case "tokens":
		return tokensHelper(client, env, atoi)
	case "failopen":
		return failOpenHelper(client, env, atoi)
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// fleetHelper sends GETs to HG_URL as fast as its budget allows, from
// HG_WORKERS goroutines, from HG_START (Unix ns) for HG_DUR.
func fleetHelper(client *redis.Client, env func(string) string, atoi func(string) int) int {
	store, err := New(client, env("KEY"), generousTimeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rs := record(store)
	opts := []core.Option{core.WithStore(rs)}
	if n := atoi("BURST"); n > 0 {
		opts = append(opts, core.WithBurst(n))
	}
	budget := core.MustBudget(core.PerSecond(atoi("RATE")), opts...)
	clock := &sendClock{}
	hc := &http.Client{Transport: core.NewTransport(clock, budget)}
	start, _ := strconv.ParseInt(env("START"), 10, 64)
	dur, _ := time.ParseDuration(env("DUR"))
	deadline := time.Unix(0, start).Add(dur)
	time.Sleep(time.Until(time.Unix(0, start)))
	var mu sync.Mutex
	var rep fleetReport
	var wg sync.WaitGroup
	for range atoi("WORKERS") {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env("URL")+"/v1/items", nil)
				resp, err := hc.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				cancel()
				mu.Lock()
				switch {
				case err != nil && (core.IsBudgetError(err) || errors.Is(err, context.DeadlineExceeded)):
					// the next turn, or the response, is past the end of the run
				case err != nil:
					rep.Errors++
					if rep.FirstError == "" {
						rep.FirstError = err.Error()
					}
				case resp.StatusCode == http.StatusOK:
					rep.OK++
				default:
					rep.Refused++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rep.Sends = clock.sends
	for _, t := range rs.keptTurns() {
		rep.Turns = append(rep.Turns, recOf(t))
	}
	rep.Paused = rs.pausedAt()
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// tokensHelper calls HG_URL (a quotatest server in token mode) from
// HG_WORKERS goroutines, from HG_START (Unix ns) for HG_DUR, as fast as a
// budget of HG_RATE requests/s with a "tokens" dimension of HG_TOK/s
// (burst HG_TOKBURST) lets it, all on one key. Call k of a worker
// estimates 50 + (k×37 mod HG_COST) tokens, uses up to a quarter fewer
// (the provider charges what it uses) and commits what it used.
func tokensHelper(client *redis.Client, env func(string) string, atoi func(string) int) int {
	store, err := New(client, env("KEY"), generousTimeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	budget := core.MustBudget(core.PerSecond(atoi("RATE")), core.WithStore(record(store)),
		core.WithDimension("tokens", core.PerSecond(atoi("TOK")), core.WithDimensionBurst(int64(atoi("TOKBURST")))))
	start, _ := strconv.ParseInt(env("START"), 10, 64)
	dur, _ := time.ParseDuration(env("DUR"))
	deadline := time.Unix(0, start).Add(dur)
	time.Sleep(time.Until(time.Unix(0, start)))
	var mu sync.Mutex
	var rep fleetReport
	var wg sync.WaitGroup
	for w := range atoi("WORKERS") {
		wg.Go(func() {
			for k := w; time.Now().Before(deadline); k++ {
				n := 50 + int64(k*37%atoi("COST"))
				used := n - int64(k*13)%(n/4+1)
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				ctx, slot := withSlot(ctx)
				p, err := budget.AcquireCost(ctx, core.Cost{Dimension: "tokens", Amount: n})
				if err != nil {
					cancel()
					if !core.IsBudgetError(err) && !errors.Is(err, context.DeadlineExceeded) {
						mu.Lock()
						rep.Errors++
						rep.FirstError = err.Error()
						mu.Unlock()
					}
					continue
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env("URL")+"/v1/chat", nil)
				req.Header.Set(quotatest.TokensHeader, strconv.FormatInt(used, 10))
				sent := time.Now().UnixNano()
				resp, err := http.DefaultTransport.RoundTrip(req)
				mu.Lock()
				rep.Sends = append(rep.Sends, sent)
				rep.Tokens = append(rep.Tokens, used)
				rep.Turns = append(rep.Turns, recOf(slot.last()))
				switch {
				case err != nil && errors.Is(err, context.DeadlineExceeded):
				case err != nil:
					rep.Errors++
					rep.FirstError = err.Error()
				case resp.StatusCode == http.StatusOK:
					rep.OK++
				default:
					rep.Refused++
				}
				mu.Unlock()
				if err == nil {
					p.Observe(resp.StatusCode, resp.Header)
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				p.Commit(core.Cost{Dimension: "tokens", Amount: used})
				p.Release()
				cancel()
			}
		})
	}
	wg.Wait()
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// failOpenHelper acquires from a PerSecond(HG_RATE) budget (burst 4) on
// HG_KEY, failing open at a quarter, from 4 goroutines, from HG_START for
// HG_DUR, feeding a 200 back for each permit, and reports when each call
// was admitted (Sends, Unix ns; OK counts them).
func failOpenHelper(client *redis.Client, env func(string) string, atoi func(string) int) int {
	// A killed Redis refuses connections at once; the timeout only has to
	// be long enough that a loaded machine's slow reply, with Redis up, is
	// not taken for an outage (whose fallback never heard the pause).
	store, err := New(client, env("KEY"), WithFailOpen(0.25),
		WithTimeout(500*time.Millisecond), WithProbeInterval(50*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	redis.SetLogger(quiet{})
	budget := core.MustBudget(core.PerSecond(atoi("RATE")), core.WithBurst(4), core.WithStore(record(store)))
	start, _ := strconv.ParseInt(env("START"), 10, 64)
	dur, _ := time.ParseDuration(env("DUR"))
	time.Sleep(time.Until(time.Unix(0, start)))
	stop := make(chan struct{})
	wait := load(budget, stop)
	time.Sleep(time.Until(time.Unix(0, start).Add(dur)))
	close(stop)
	var rep fleetReport
	for _, a := range wait() {
		if a.err == nil {
			rep.OK++
			rep.Sends = append(rep.Sends, a.at.UnixNano())
			rep.Turns = append(rep.Turns, recOf(a.turn))
		}
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// leaseHelper takes HG_N leases of a fleet capped at HG_MAX, says "ready"
// and holds them (renewing) until it is killed.
func leaseHelper(client *redis.Client, env func(string) string, atoi func(string) int) int {
	ttl, _ := time.ParseDuration(env("LEASE_TTL"))
	store, err := New(client, env("KEY"), generousTimeout, WithMaxInFlight(atoi("MAX")), WithLeaseTTL(ttl))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for range atoi("N") {
		if _, err := store.AcquireLease(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	fmt.Println("ready")
	select {}
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
}

// startHelper starts this binary as a helper in mode, with env (HG_ added
// to each name). It is killed at the test's end if still running.
func startHelper(t *testing.T, mode string, env map[string]string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	for k, v := range env {
		cmd.Env = append(cmd.Env, "HG_"+k+"="+v)
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &helper{cmd: cmd, stdout: bufio.NewReader(out)}
}

// line reads the helper's next line of output.
func (h *helper) line(t *testing.T) string {
	t.Helper()
	s, err := h.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("helper output: %v (got %q)", err, s)
	}
	return s
}

// report waits for a fleet helper's report.
func (h *helper) report(t *testing.T) fleetReport {
	t.Helper()
	var r fleetReport
	if err := json.Unmarshal([]byte(h.line(t)), &r); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	return r
}
