package core

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAcquireRelease is the uncontended admit path: a budget so fast
// that no call waits. It must not allocate.
func BenchmarkAcquireRelease(b *testing.B) {
	bud := MustBudget(Rate{1_000_000_000, time.Second})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := bud.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

// BenchmarkAcquireReleaseCapped adds a concurrency cap: a slot taken and
// freed per call.
func BenchmarkAcquireReleaseCapped(b *testing.B) {
	bud := MustBudget(Rate{1_000_000_000, time.Second}, WithMaxInFlight(64))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := bud.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	bud := MustBudget(Rate{1_000_000_000, time.Second})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := bud.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
}
