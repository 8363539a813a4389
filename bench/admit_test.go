package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"go.uber.org/ratelimit"
	"golang.org/x/time/rate"

	"github.com/headgate-go/headgate/core"
)

// unlimited is the rate every limiter is given on the admit path: one
// request per nanosecond, far above what a call can reach, so no call ever
// waits.
const unlimited = 1_000_000_000

var errDenied = errors.New("denied")

// An admitter builds a fresh limiter and returns its admit call.
type admitter struct {
	name string
	new  func() func(context.Context) error
}

// admitters are the admit paths compared, headgate first.
var admitters = []admitter{
	{"headgate", func() func(context.Context) error {
		b := core.MustBudget(core.Rate{Requests: unlimited, Period: time.Second})
		return func(ctx context.Context) error {
			p, err := b.Acquire(ctx)
			if err != nil {
				return err
			}
			p.Release()
			return nil
		}
	}},
	{"headgate-capped", func() func(context.Context) error {
		b := core.MustBudget(core.Rate{Requests: unlimited, Period: time.Second}, core.WithMaxInFlight(1<<20))
		return func(ctx context.Context) error {
			p, err := b.Acquire(ctx)
			if err != nil {
				return err
			}
			p.Release()
			return nil
		}
	}},
	// A burst of 1000 so that a refill never comes short, even when two
	// calls read the same clock value.
	{"xrate-wait", func() func(context.Context) error {
		l := rate.NewLimiter(unlimited, 1000)
		return l.Wait
	}},
	{"xrate-allow", func() func(context.Context) error {
		l := rate.NewLimiter(unlimited, 1000)
		return func(context.Context) error {
			if !l.Allow() {
				return errDenied
			}
			return nil
		}
	}},
	// rate.Inf is x/time/rate's own short cut: no token arithmetic at all.
	{"xrate-wait-inf", func() func(context.Context) error {
		l := rate.NewLimiter(rate.Inf, 0)
		return l.Wait
	}},
	// ratelimit.New(1e9) spaces permissions 1 ns apart (time.Second/rate):
	// a call takes far longer than that, so Take never sleeps.
	{"uber-take", func() func(context.Context) error {
		l := ratelimit.New(unlimited)
		return func(context.Context) error {
			l.Take()
			return nil
		}
	}},
	{"failsafe-smooth-try", func() func(context.Context) error {
		l := ratelimiter.NewSmooth[any](unlimited, time.Second)
		return func(context.Context) error {
			if !l.TryAcquirePermit() {
				return errDenied
			}
			return nil
		}
	}},
	{"failsafe-smooth-acquire", func() func(context.Context) error {
		l := ratelimiter.NewSmooth[any](unlimited, time.Second)
		return l.AcquirePermit
	}},
	{"failsafe-bursty-try", func() func(context.Context) error {
		l := ratelimiter.NewBursty[any](unlimited, time.Second)
		return func(context.Context) error {
			if !l.TryAcquirePermit() {
				return errDenied
			}
			return nil
		}
	}},
	{"failsafe-bursty-acquire", func() func(context.Context) error {
		l := ratelimiter.NewBursty[any](unlimited, time.Second)
		return l.AcquirePermit
	}},
}

// BenchmarkAdmit is the uncontended admit path: one goroutine, no wait.
func BenchmarkAdmit(b *testing.B) {
	for _, a := range admitters {
		b.Run(a.name, func(b *testing.B) {
			admit := a.new()
			ctx := context.Background()
			b.ReportAllocs()
			denied := 0
			for b.Loop() {
				if admit(ctx) != nil {
					denied++
				}
			}
			reportDenied(b, denied)
		})
	}
}

// BenchmarkAdmitParallel is the admit path from GOMAXPROCS goroutines at
// once, all on one limiter.
func BenchmarkAdmitParallel(b *testing.B) { admitParallel(b, 1) }

// BenchmarkAdmitParallel4x is BenchmarkAdmitParallel from 4×GOMAXPROCS
// goroutines: more callers than CPUs, as a busy service has.
func BenchmarkAdmitParallel4x(b *testing.B) { admitParallel(b, 4) }

func admitParallel(b *testing.B, perCPU int) {
	for _, a := range admitters {
		b.Run(a.name, func(b *testing.B) {
			admit := a.new()
			ctx := context.Background()
			b.ReportAllocs()
			var denied atomic.Int64
			b.SetParallelism(perCPU)
			b.RunParallel(func(pb *testing.PB) {
				n := int64(0)
				for pb.Next() {
					if admit(ctx) != nil {
						n++
					}
				}
				denied.Add(n)
			})
			reportDenied(b, int(denied.Load()))
		})
	}
}

// reportDenied reports calls a non-blocking limiter refused, which would
// mean the rate was not unlimited enough; it stays silent at zero.
func reportDenied(b *testing.B, denied int) {
	if denied > 0 {
		b.ReportMetric(float64(denied)/float64(b.N), "denied/op")
	}
}

// TestAdmittersNeverWait checks the premise of the admit benchmarks: at
// the rate they are given, no limiter refuses or makes a call wait.
func TestAdmittersNeverWait(t *testing.T) {
	const calls = 20000
	ctx := context.Background()
	for _, a := range admitters {
		admit := a.new()
		for i := range calls {
			if err := admit(ctx); err != nil {
				t.Fatalf("%s: call %d: %v", a.name, i, err)
			}
		}
	}

	// headgate reports every wait it makes a call take.
	waits := 0
	bud := core.MustBudget(core.Rate{Requests: unlimited, Period: time.Second},
		core.WithObserver(func(core.Event) { waits++ }))
	for range calls {
		p, err := bud.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	if waits != 0 {
		t.Errorf("headgate: %d waits in %d calls, want none", waits, calls)
	}

	// x/time/rate waits only when it runs out of tokens.
	l := rate.NewLimiter(unlimited, 1000)
	for range calls {
		if r := l.Reserve(); r.Delay() != 0 {
			t.Fatalf("x/time/rate: a reservation must wait %v", r.Delay())
		}
	}

	// uber's Take sleeps on its clock: count the sleeps.
	clk := &sleepCounter{}
	u := ratelimit.New(unlimited, ratelimit.WithClock(clk))
	for range calls {
		u.Take()
	}
	if clk.sleeps != 0 {
		t.Errorf("uber: Take slept %d times in %d calls, want never", clk.sleeps, calls)
	}

	// failsafe's ReservePermit returns the wait it would take.
	f := ratelimiter.NewSmooth[any](unlimited, time.Second)
	for range calls {
		if d := f.ReservePermit(); d != 0 {
			t.Fatalf("failsafe smooth: a permit must wait %v", d)
		}
	}
}

// sleepCounter is a ratelimit.Clock on the real clock that counts sleeps.
type sleepCounter struct{ sleeps int }

func (*sleepCounter) Now() time.Time { return time.Now() }

func (c *sleepCounter) Sleep(d time.Duration) {
	c.sleeps++
	time.Sleep(d)
}

// BenchmarkClock is the clock read every limiter here makes per admission
// (time.Since on a monotonic time, as headgate's budget clock and
// failsafe-go's stopwatch read it), from one goroutine and from
// GOMAXPROCS at once: the floor under an admit path that reads the clock
// outside any lock. Where the two differ little per call, clock reads on
// different CPUs do not scale.
func BenchmarkClock(b *testing.B) {
	epoch := time.Now()
	b.Run("serial", func(b *testing.B) {
		var sum time.Duration
		for b.Loop() {
			sum += time.Since(epoch)
		}
		clockSink.Store(int64(sum))
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			var sum time.Duration
			for pb.Next() {
				sum += time.Since(epoch)
			}
			clockSink.Store(int64(sum))
		})
	})
}

var clockSink atomic.Int64 // keeps the clock reads from being optimized away
