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

// BenchmarkRedis is a fleet's shared budget on a real redis-server on
// loopback (started by the benchmark, on the same CPUs): admissions per
// second through headgate's redisstore (Acquire and Release of a budget
// WithStore, one round trip each) beside go-redis/redis_rate's Allow (one
// round trip too), serially and from 8 goroutines. The pace is far above
// what Redis serves, so nobody waits: the figure is the store's cost.
func BenchmarkRedis(b *testing.B) {
	srv, err := matrix.StartRedis()
	if err != nil {
		b.Skip(err)
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()

	store, err := redisstore.New(rdb, "bench:headgate")
	if err != nil {
		b.Fatal(err)
	}
	budget := core.MustBudget(core.Rate{Requests: unlimited, Period: time.Second}, core.WithStore(store))
	headgate := func(ctx context.Context) error {
		p, err := budget.Acquire(ctx)
		if err != nil {
			return err
		}
		p.Release()
		return nil
	}
	lim := redis_rate.NewLimiter(rdb)
	limit := redis_rate.PerSecond(1_000_000_000)
	redisRate := func(ctx context.Context) error {
		res, err := lim.Allow(ctx, "bench:redis_rate", limit)
		if err == nil && res.Allowed == 0 {
			return errDenied
		}
		return err
	}
	for _, c := range []struct {
		name  string
		admit func(context.Context) error
	}{{"headgate", headgate}, {"redis_rate", redisRate}} {
		b.Run("serial/"+c.name, func(b *testing.B) {
			ctx := context.Background()
			start := time.Now()
			for b.Loop() {
				if err := c.admit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
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
