package core

import (
	"math"

	"github.com/headgate-go/headgate/core/internal/gcra"
)

// WithBackfill lets a request go before callers already waiting when that
// delays none of them (conservative backfilling, for budgets with
// dimensions): a small request may use the tokens that accumulate while a
// large one waits for its share. The request is reserved as if it came
// first, and goes now only if every waiting caller keeps its send time;
// otherwise it queues as usual. Waiters are never delayed by a backfill
// as planned when it happens; a later event that re-times them (a refund, a
// pace change) starts from the state the backfill left. Off by default:
// arrival order is strict.
func WithBackfill() Option {
	return optionFunc(func(c *config) { c.backfill = true })
}

// backfillLocked grants r now, ahead of the queue, if reserving it first
// and re-timing every waiter after it leaves each waiter's send time as it
// was. Otherwise it changes nothing and reports false.
func (b *Budget) backfillLocked(now int64, r *reservation) bool {
	type saved struct {
		turn                       gcra.Turn
		tatBefore, tatAfter, slack []int64
		sendAt                     int64
	}
	head := b.queue.Head
	if head.res == nil {
		return false
	}
	k := len(b.dims.d)
	gTat := b.g.TAT
	dTat := make([]int64, k)
	for i := range b.dims.d {
		dTat[i] = b.dims.d[i].g.TAT
	}
	snap := make([]saved, 0, b.queue.N)
	for w := head; w != nil; w = w.Next {
		snap = append(snap, saved{w.turn, append([]int64(nil), w.res.tatBefore...),
			append([]int64(nil), w.res.tatAfter...), append([]int64(nil), w.res.slack...), w.res.sendAt})
	}
	restore := func() {
		b.g.Rewind(gTat)
		for i := range b.dims.d {
			b.dims.d[i].g.Rewind(dTat[i])
		}
		j := 0
		for w := head; w != nil; w = w.Next {
			sv := &snap[j]
			w.turn, w.res.sendAt = sv.turn, sv.sendAt
			copy(w.res.tatBefore, sv.tatBefore)
			copy(w.res.tatAfter, sv.tatAfter)
			copy(w.res.slack, sv.slack)
			j++
		}
	}
	// The state before the queued reservations, then r first.
	b.rewindLocked(head.turn.TATBefore)
	b.resetDimsLocked(head.res)
	if t, _, ok := b.reserveLocked(now, now+1, math.MinInt64, r, 1, b.g.TAT); !ok || t.SendAt > now {
		restore()
		if ok {
			b.dims.untrack(r)
		}
		return false
	}
	after := now
	j := 0
	for w := head; w != nil; w = w.Next {
		t, _, ok := b.reserveLocked(now, never, after, w.res, int64(j)+2, head.turn.TATBefore)
		if !ok || t.SendAt != snap[j].turn.SendAt {
			restore()
			b.dims.untrack(r)
			return false
		}
		w.turn, after = t, t.SendAt
		j++
	}
	return true
}
