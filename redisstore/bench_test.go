package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
)

// Admissions per second through Redis on loopback: one Take (one EVALSHA
// round trip) per admission. The pace is far above what Redis can serve,
// so nothing waits: the figure is the store's cost.
//
//	go test -run '^$' -bench . -benchtime 2s
func BenchmarkTake(b *testing.B) {
	s := newStore(b)
	p := core.Pace{Interval: time.Nanosecond, Burst: 1}
	ctx := context.Background()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := s.Take(ctx, p, -1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
}

// BenchmarkTakeParallel is BenchmarkTake from GOMAXPROCS×8 goroutines
// sharing one client: round trips overlap.
func BenchmarkTakeParallel(b *testing.B) {
	s := newStore(b)
	p := core.Pace{Interval: time.Nanosecond, Burst: 1}
	b.ReportAllocs()
	b.SetParallelism(8)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := s.Take(ctx, p, -1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
}

// BenchmarkBudgetAcquireParallel measures whole admissions: a budget on
// the store, Acquire and Release, from GOMAXPROCS×8 goroutines.
func BenchmarkBudgetAcquireParallel(b *testing.B) {
	s := newStore(b)
	bud := core.MustBudget(core.Rate{Requests: 1, Period: time.Nanosecond}, core.WithStore(s))
	b.ReportAllocs()
	b.SetParallelism(8)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			p, err := bud.Acquire(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			p.Release()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
}
