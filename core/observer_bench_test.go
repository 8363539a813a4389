package core

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkAcquireReleaseWithObserver is BenchmarkAcquireRelease with
// observers set: a budget so fast that no call waits, so no event is
// emitted and the observers must add nothing, allocations included
// (compare with BenchmarkAcquireRelease: 0 allocs/op).
func BenchmarkAcquireReleaseWithObserver(b *testing.B) {
	discard := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var calls int
	for _, bb := range []struct {
		name string
		obs  Observer
		opts []Option
	}{
		{"func", func(Event) { calls++ }, nil},
		{"slog", SlogObserver(discard), nil},
		{"fanout", Observers(SlogObserver(discard), func(Event) { calls++ }), nil},
		{"fanout-capped", Observers(SlogObserver(discard), func(Event) { calls++ }), []Option{WithMaxInFlight(64)}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			bud := MustBudget(Rate{1_000_000_000, time.Second}, append(bb.opts, WithObserver(bb.obs), WithName("api"))...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				p, err := bud.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
			}
		})
	}
	if calls != 0 {
		b.Fatalf("%d events on the admit path; want none", calls)
	}
}

// TestAcquireReleaseWithObserverAllocs is the benchmark's claim as a test:
// observers add no allocation to an admission that does not wait.
func TestAcquireReleaseWithObserverAllocs(t *testing.T) {
	discard := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bud := MustBudget(Rate{1_000_000_000, time.Second}, WithMaxInFlight(64), WithName("api"),
		WithObserver(Observers(SlogObserver(discard), func(Event) { t.Error("event on the admit path") })))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		p, err := bud.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
	})
	if allocs != 0 {
		t.Fatalf("Acquire+Release with observers allocates %v times per call; want 0", allocs)
	}
}

// BenchmarkSlogObserver is the cost of one wait event, logged and not.
func BenchmarkSlogObserver(b *testing.B) {
	e := Event{Budget: "api", Reason: Paced, Wait: 200 * time.Millisecond}
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		b.Run("handler-at-"+level.String(), func(b *testing.B) {
			obs := SlogObserver(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: level})))
			b.ReportAllocs()
			for b.Loop() {
				obs(e)
			}
		})
	}
}
