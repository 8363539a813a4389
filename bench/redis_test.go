package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/headgate-go/headgate/bench/matrix"
	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/redisstore"
)

// redisRate is the rate of BenchmarkRedis's limiters, per second: far
// above what Redis serves, and no higher, so that redis_rate's script
// writes as headgate's does. redis_rate counts time in float seconds from
// 2017 (steps of about 60 ns today): at 10⁹ per second an admission's
// nanosecond is lost in the rounding, its tat never moves and its script
// never writes (INFO commandstats: TIME and GET, no SET), a read-only
// round trip beside headgate's read-and-write one.
const redisRate = 1_000_000

// The rows of BenchmarkRedis take turns in chunks: serialChunk calls of
// one row, then of the next, each row once per round; parallelChunk calls
// from each of the 8 goroutines of a parallel turn.
const (
	serialChunk   = 32
	parallelChunk = 64
	goroutines    = 8
)

// BenchmarkRedis is a fleet's shared budget on a real redis-server on
// loopback (started by the benchmark, on the same CPUs): admissions per
// second through headgate's redisstore (Acquire and Release of a budget
// WithStore: one EVALSHA per admission, Release makes no call) beside
// go-redis/redis_rate's Allow (one round trip too), serially and from 8
// goroutines, and a bare PING: the round trip alone. The rate,
// redisRate, is far above what Redis serves, so nobody waits: the figure
// is the store's cost.
//
// A serial row is a ping-pong between two processes: on a VM whose idle
// CPUs halt, most of its time is the wake-up of each side, so its
// admissions/s follow how busy the machine is (2–3× from one second to
// the next here), not the code. So the rows are not run one after the
// other: they take turns, in chunks, within one benchmark ("serial", then
// "8-goroutines"), each chunk timed and counted to its row, so that every
// row is measured in the same moments as the others. Each reports
// <row>-admissions/s (its calls over its own chunks' time) and, serially,
// <row>-vs-ping: its time per call over a PING's.
//
// The client is built as redisstore recommends, with
// ContextTimeoutEnabled, so that the store bounds a call on the caller's
// goroutine; "headgate-plain-client" is the store on a client without it,
// where each call runs on a goroutine of its own (see redisstore.Store).
// The store's timeout is the client's ReadTimeout (3 s), which bounds
// redis_rate's calls: a latency spike on a loaded machine is not an
// outage here.
func BenchmarkRedis(b *testing.B) {
	srv, err := matrix.StartRedis()
	if err != nil {
		b.Skip(err)
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	plain := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer plain.Close()

	admit := func(client redis.UniversalClient, key string) func(context.Context) error {
		store, err := redisstore.New(client, key, redisstore.WithTimeout(3*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		budget := core.MustBudget(core.Rate{Requests: redisRate, Period: time.Second}, core.WithStore(store))
		return func(ctx context.Context) error {
			p, err := budget.Acquire(ctx)
			if err != nil {
				return err
			}
			p.Release()
			return nil
		}
	}
	lim := redis_rate.NewLimiter(rdb)
	limit := redis_rate.PerSecond(redisRate)
	redisRate := func(ctx context.Context) error {
		res, err := lim.Allow(ctx, "bench:redis_rate", limit)
		if err == nil && res.Allowed == 0 {
			return errDenied
		}
		return err
	}
	cases := []struct {
		name  string
		admit func(context.Context) error
	}{
		{"headgate", admit(rdb, "bench:headgate")},
		{"headgate-plain-client", admit(plain, "bench:headgate-plain")},
		{"redis_rate", redisRate},
		// A bare PING: one round trip and nothing else, the most any
		// admission of one round trip can reach on this machine. The last
		// row: vs-ping reads it there.
		{"ping", func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
	}
	ping := len(cases) - 1
	// A fresh redis-server, fresh connections and scripts not yet loaded
	// slow whichever case runs first: warm them all up before measuring.
	for _, c := range cases {
		for range 1000 {
			if err := c.admit(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		// One iteration is one call, of the row whose turn it is: ns/op
		// is the rows' mean.
		ctx := context.Background()
		var t turns
		t.start(len(cases))
		for b.Loop() {
			if err := cases[t.row].admit(ctx); err != nil {
				b.Fatal(err)
			}
			if t.k++; t.k == serialChunk {
				t.next(serialChunk)
			}
		}
		t.next(t.k)
		for i, c := range cases {
			b.ReportMetric(t.rate(i), c.name+"-admissions/s")
			if i != ping && t.rate(i) > 0 {
				b.ReportMetric(t.rate(ping)/t.rate(i), c.name+"-vs-ping")
			}
		}
	})
	b.Run("8-goroutines", func(b *testing.B) {
		// One iteration is one turn: 8 goroutines making parallelChunk
		// calls each, of one row (ns/op is a turn's time). A turn ends
		// when its last goroutine is done: the others' idle tail is in
		// every row's time alike.
		var t turns
		t.start(len(cases))
		for b.Loop() {
			admit := cases[t.row].admit
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					ctx := context.Background()
					for range parallelChunk {
						if err := admit(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if b.Failed() {
				b.FailNow()
			}
			t.next(goroutines * parallelChunk)
		}
		for i, c := range cases {
			b.ReportMetric(t.rate(i), c.name+"-admissions/s")
		}
	})
}

// turns times rows that take turns: the current row, the calls it made in
// its current turn (k), and per row the calls made and the time spent in
// its turns. Every row has one turn per round, in an order drawn afresh
// each round (from a fixed seed): a row's figure then does not depend on
// which row goes before it, which it does by a few per cent (the state a
// turn leaves in Redis, the client and the CPUs).
type turns struct {
	row, k int
	calls  []int
	spent  []time.Duration
	t0     time.Time
	order  []int // this round's rows; order[pos] is row
	pos    int
	rng    *rand.Rand
}

func (t *turns) start(rows int) {
	t.calls, t.spent = make([]int, rows), make([]time.Duration, rows)
	t.rng = rand.New(rand.NewPCG(1, 2))
	t.order = t.rng.Perm(rows)
	t.row = t.order[0]
	t.t0 = time.Now()
}

// next ends the current row's turn, of n calls, and starts the next row's.
func (t *turns) next(n int) {
	now := time.Now()
	t.calls[t.row] += n
	t.spent[t.row] += now.Sub(t.t0)
	if t.pos++; t.pos == len(t.order) {
		t.rng.Shuffle(len(t.order), func(i, j int) { t.order[i], t.order[j] = t.order[j], t.order[i] })
		t.pos = 0
	}
	t.row, t.k, t.t0 = t.order[t.pos], 0, now
}

// rate is row i's calls per second of its turns.
func (t *turns) rate(i int) float64 {
	if t.spent[i] <= 0 {
		return 0
	}
	return float64(t.calls[i]) / t.spent[i].Seconds()
}
