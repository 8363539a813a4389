package bench

import (
	"context"
	"runtime"
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

// pingChunk is how many admissions, then PINGs, a serial row of
// BenchmarkRedis runs in turn.
const pingChunk = 32

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
// admissions/s follow how busy the machine is, not the code. Each serial
// row alternates with bare PINGs and reports vs-ping, its time per
// admission over a PING's in the same moments: the figure to compare.
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
		// admission of one round trip can reach on this machine.
		{"ping", func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
	}
	// A fresh redis-server, fresh connections and scripts not yet loaded
	// slow whichever case runs first: warm them all up before measuring.
	for _, c := range cases {
		for range 1000 {
			if err := c.admit(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range cases {
		b.Run("serial/"+c.name, func(b *testing.B) {
			// The row's admissions alternate with bare PINGs, in chunks,
			// each chunk timed: a serial round trip on a small VM costs
			// what waking its idle CPUs costs, which swings with whatever
			// else runs (2–3× from one row to the next), so each row is
			// timed beside the round trip in the same moments, and vs-ping
			// is the ratio. admissions/s counts the row's own chunks alone;
			// ns/op is an admission and a PING.
			ctx := context.Background()
			var spent, pinged time.Duration
			i := 0
			t0 := time.Now()
			for b.Loop() {
				if err := c.admit(ctx); err != nil {
					b.Fatal(err)
				}
				if i++; i%pingChunk == 0 {
					t1 := time.Now()
					spent += t1.Sub(t0)
					for range pingChunk {
						if err := rdb.Ping(ctx).Err(); err != nil {
							b.Fatal(err)
						}
					}
					t0 = time.Now()
					pinged += t0.Sub(t1)
				}
			}
			spent += time.Since(t0)
			b.ReportMetric(float64(b.N)/spent.Seconds(), "admissions/s")
			if pings := i / pingChunk * pingChunk; pings > 0 {
				b.ReportMetric(spent.Seconds()/float64(b.N)/(pinged.Seconds()/float64(pings)), "vs-ping")
			}
		})
		b.Run("8-goroutines/"+c.name, func(b *testing.B) {
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0))) // 8 goroutines on this machine's CPUs
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if err := c.admit(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
		})
	}
}
