package core

import (
	"github.com/headgate-go/headgate/core/internal/gcra"
	"github.com/headgate-go/headgate/core/internal/list"
)

// waiter is a call queued for its turn, or for a concurrency slot (then
// only deadline, wake, state, err, slot, key and res are used, until the
// slot it is handed moves it to the turn queue: slots.go). Its fields are
// guarded by the budget's mu; once it is granted or failed they are final,
// and its own goroutine reads them after the signal (wait.go).
type waiter struct {
	turn      gcra.Turn
	deadline  int64
	arrived   int64
	pauseEnd  int64 // the pause that decided its turn, 0 for none
	wake      chan struct{}
	err       error        // when state is failed
	granted   int64        // when state is granted
	slot      slotRef      // the slot it was handed (a slot waiter, a capped call's turn) or a reserved place keeps
	res       *reservation // its extra dimensions' reservation, or nil
	expire    int64        // a reserved place: when it is given up if nobody takes it
	key       uint64       // a reserved place, adopted or not: the key of the request it is reserved for (place.go)
	callKey   uint64       // the key of the request whose turn it waits for (0: none), for a refused call rejoining (place.go)
	state     waiterState
	throttled bool // its wait was slowed by adaptive throttling (a Throttled event)
	place     bool // a reserved place: no caller yet (place.go)
	list.Link[waiter]
}

// waiterState is where a waiter is; see the scheduler's invariant 3
// (scheduler.go) for who may move it.
type waiterState uint8

const (
	queued     waiterState = iota // waits for its turn, in the budget's queue
	granted                       // its turn given (or its slot, a store's slot waiter)
	failed                        // its turn, or its slot, refused: err says why
	slotQueued                    // waits for a concurrency slot, in the budget's slot queue (slots.go)
)

// A waiter of a call's turn is recycled, with its channel, through the
// budget's pool (Budget.waiters), so a caller that parks allocates nothing
// once the budget has had callers park before.
//
// The invariant that makes the reuse safe: a waiter goes back to the pool
// (recycle) only from wait, the one place its goroutine leaves it, and only
// once nobody else holds it, can send on its channel or select on it:
//
//   - it was moved out of queued, and wait has received the one signal
//     whoever moved it sends (scheduler.go, invariant 3: moved once, so
//     signalled once; the signaller reads nothing of it after the send); or
//   - its own goroutine took it out of the queue while still queued (its
//     context ended): then nobody moves it, and nobody signals it.
//
// Either way its channel is empty and it is in no list. A capped call of an
// in-memory budget waits in one waiter for its slot and then its turn
// (slots.go) and keeps the same rules: taken out while waiting for a slot
// only by its own goroutine, moved out of slotQueued by a handover that
// queues it for its turn or signals it once. A store's slot waiter is
// never recycled: it may leave with its signal unread. The pool is the
// budget's own, not the package's: a channel made inside a synctest bubble
// must stay with the budget that lives there.

// newWaiter returns a waiter with an empty channel, from the pool if it
// has one. (Not inlined: takeTurn's frame stays small, scheduler.go.)
//
//go:noinline
func (b *Budget) newWaiter() *waiter {
	if w, _ := b.waiters.Get().(*waiter); w != nil {
		return w
	}
	return &waiter{wake: make(chan struct{}, 1)}
}

// recycle clears w and puts it back in the pool. Only for a waiter nobody
// else holds and whose channel is empty (the invariant above).
func (b *Budget) recycle(w *waiter) {
	*w = waiter{wake: w.wake}
	b.waiters.Put(w)
}

// signal wakes the waiter's goroutine without blocking.
func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// waitQueue is the FIFO of waiters, for their turn or for a slot.
type waitQueue = list.List[waiter, *waiter]
