package core

// waiter is a call queued for its turn, or for a concurrency slot (then
// only deadline, wake, state, err and slot are used). Its fields are guarded by the budget's mu.
type waiter struct {
	turn     turn
	deadline int64
	arrived  int64
	pauseEnd int64 // the pause that decided its turn, 0 for none
	wake     chan struct{}
	state    waiterState
	err      error        // when state is failed
	granted  int64        // when state is granted
	slot     slotRef      // the slot handed over (a slot waiter)
	res      *reservation // its extra dimensions' reservation, or nil
	place    bool         // a kept place: no caller yet, see Budget.keepPlaceLocked
	expire   int64        // a kept place: when it is given up if nobody takes it
	prev     *waiter
	next     *waiter
}

type waiterState uint8

const (
	queued waiterState = iota
	granted
	failed
)

// signal wakes the waiter's goroutine without blocking.
func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// waitQueue is a FIFO of waiters: a doubly linked list, so a cancelled
// waiter leaves from the middle in O(1).
type waitQueue struct {
	head, tail *waiter
	n          int
}

// pushFront puts w at the head of the queue.
func (q *waitQueue) pushFront(w *waiter) {
	w.prev, w.next = nil, q.head
	if q.head != nil {
		q.head.prev = w
	} else {
		q.tail = w
	}
	q.head = w
	q.n++
}

// insertAfter puts w right behind at, which is in the queue.
func (q *waitQueue) insertAfter(at, w *waiter) {
	w.prev, w.next = at, at.next
	if at.next != nil {
		at.next.prev = w
	} else {
		q.tail = w
	}
	at.next = w
	q.n++
}

func (q *waitQueue) push(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	q.n--
}
