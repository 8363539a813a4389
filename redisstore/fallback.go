package redisstore

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/headgate-go/headgate/core"
)

// fallback is the local budget a store failing open spends from while
// Redis is down: a core.MemoryStore at a share of the pace, whose clock is
// shifted onto the store's (Unix nanoseconds) so that the budgets above
// see one clock. It hears every report while Redis is up, so a pause in
// force when Redis fails is kept.
type fallback struct {
	share  float64
	mem    *core.MemoryStore
	offset int64 // mem's clock + offset ≈ Unix ns

	mu    sync.Mutex
	turns map[string]int64 // Token → At of granted turns not yet due, for Refund; guarded by mu

	slots chan struct{} // the local lease cap; nil without WithMaxInFlight
}

func newFallback(share float64, maxInFlight int) *fallback {
	f := &fallback{share: share, offset: time.Now().UnixNano(), turns: make(map[string]int64)}
	f.mem = core.NewMemoryStore()
	if maxInFlight > 0 {
		f.slots = make(chan struct{}, max(1, int(float64(maxInFlight)*share)))
	}
	return f
}

// maxSpan is core's bound on how far ahead any pace plans: a burst, at the
// slowest adaptive pace, spans at most 2^61 ns (73 years), so that sums of
// the schedule's times never overflow.
const maxSpan = 1 << 61

// pace is p at the fallback's share: a longer interval, a smaller burst.
// The interval saturates at core's span bound, so that a tiny share slows
// the fallback to a crawl rather than overflowing its schedule.
func (f *fallback) pace(p core.Pace) core.Pace {
	burst := max(1, int(float64(p.Burst)*f.share))
	slowest := 1.0
	if p.Adaptive.Enabled() {
		slowest = p.Adaptive.MinRate
	}
	iv := math.Min(float64(p.Interval)/f.share, maxSpan*slowest/float64(burst))
	return core.Pace{Interval: time.Duration(iv), Burst: burst, Adaptive: p.Adaptive}
}

func (f *fallback) take(ctx context.Context, p core.Pace, maxWait time.Duration) (core.Turn, error) {
	t, err := f.mem.Take(ctx, f.pace(p), maxWait)
	if err != nil {
		return t, err
	}
	t.At += f.offset
	t.Token = "f" + t.Token // the memory store's own token, marked as the fallback's
	if t.Granted && t.Wait > 0 {
		f.mu.Lock()
		if len(f.turns) >= 64 {
			due := time.Now().UnixNano()
			for k, at := range f.turns {
				if at < due {
					delete(f.turns, k)
				}
			}
		}
		f.turns[t.Token] = t.At
		f.mu.Unlock()
	}
	return t, nil
}

// refund gives back a turn the fallback granted, and reports whether t was
// one.
func (f *fallback) refund(ctx context.Context, t core.Turn) bool {
	f.mu.Lock()
	at, ok := f.turns[t.Token]
	if ok && at == t.At {
		delete(f.turns, t.Token)
	}
	f.mu.Unlock()
	if !ok || at != t.At {
		return false
	}
	t.At -= f.offset
	t.Token = t.Token[1:]
	f.mem.Refund(ctx, t)
	return true
}

func (f *fallback) report(ctx context.Context, r core.Report) core.StoreStatus {
	r.Pace = f.pace(r.Pace)
	if r.Sent != math.MaxInt64 { // "sent after any decrease" stays so
		r.Sent -= f.offset
	}
	st, _ := f.mem.Report(ctx, r)
	return st
}

func (f *fallback) status(ctx context.Context) (core.StoreStatus, error) {
	return f.mem.Status(ctx)
}
