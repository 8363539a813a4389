package core

// A call granted its turn before a server pause became known may not have
// gone yet when it does. A burst's turns are granted at one instant, but
// its callers wake and reach the wire one after another — over
// milliseconds on a loaded machine, a window's burst of 99 on two CPUs —
// and the refusal that begins the pause may be applied meanwhile. Such a
// call does not go into the known pause: on waking it finds that the
// pause moved later since its grant (Budget.pausedAt, a hint read without
// mu) and waits again, first in line behind the kept places (it was
// granted before anyone who queued since), for the pause's end.

// holdBack queues w again, granted at w.granted, when the server's pause
// moved later since and has not ended, and reports whether it did. w's
// signal has been received: its goroutine alone holds it (scheduler.go,
// invariant 3). Its first turn was spent; it reserves another, after the
// pause, so the pause's end lets no more go at once than it would have;
// one whose new turn passes its deadline fails, as any waiter does. (Not
// with extra dimensions: their reservation was granted with the turn.)
//
//go:noinline
func (b *Budget) holdBack(w *waiter) bool {
	now := b.now()
	b.lock()
	if p := b.pausedAt.Load(); p == 0 || p < w.granted || b.pause.until <= now || b.dims != nil {
		b.unlock()
		return false
	}
	var last *waiter // the end of the run of kept places at the head
	for q := b.queue.head; q != nil && q.kept(); q = q.next {
		last = q
	}
	w.state, w.pauseEnd = queued, b.pause.until
	switch h := b.queue.head; {
	case last != nil:
		b.queue.insertAfter(last, w) // (re-timed with the queue)
	case h != nil:
		w.turn.tatBefore = h.turn.tatBefore // (the state before the queued reservations)
		b.queue.pushFront(w)
	default:
		w.turn.tatBefore = b.g.tat
		b.queue.pushFront(w)
	}
	b.retimeQueueLocked(now) // (not retimeLocked: w's old turn has come, and would be granted again)
	b.dispatchLocked(now)
	b.unlock()
	return true
}
