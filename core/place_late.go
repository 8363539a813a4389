package core

// A late retry still goes first. A reserved place waits for its refused
// call's retry one interval of the pace past its turn (placeGrace) and is
// then given up, so that a call that never comes back costs the others
// little. A retry that wakes later than that (a loaded machine's timer)
// would find the callers queued during the pause ahead of it. So a place
// given up notes its key (givePlaceUpLocked, at most maxRejoin of them),
// and the call for that key that comes while others still wait goes first
// in line behind the reserved places, as a call held back by the pause does
// (requeueLocked): the callers who queued during the pause wait one turn
// more, not the refused call behind all of them. The notes are dropped
// once nobody waits (turnLocked): there is nobody left to go ahead of. A
// note names the request (its method and URL), as a reserved place does:
// another caller's identical request arriving first takes it. With
// WithMaxInFlight a late retry first waits for a slot, in arrival order,
// and the note is no help (the reserved place's own slot was freed when it was
// given up).

// clear forgets every key noted.
func (r *rejoining) clear() { r.n = 0 }

// take reports whether key is noted, and forgets it if it is.
func (r *rejoining) take(key uint64) bool {
	for i, k := range r.keys[:r.n] {
		if k == key {
			copy(r.keys[i:r.n], r.keys[i+1:r.n])
			r.n--
			return true
		}
	}
	return false
}

// lateRetryLocked queues w for the late retry of a refused call for key,
// arriving at now, first in line behind the reserved places. A turn it cannot
// have before deadline fails it (retimeQueueLocked), as any waiter's.
func (b *Budget) lateRetryLocked(w *waiter, now, deadline int64, key uint64) {
	w.state, w.deadline, w.arrived, w.callKey = queued, deadline, now, key
	w.throttled = b.model.Factor() < 1
	b.requeueLocked(w, now)
}

// maxRejoin bounds the refused calls noted at once.
const maxRejoin = 8

// rejoining is the keys of refused calls, in the order of their refusals,
// whose retries go first when they come back.
type rejoining struct {
	keys [maxRejoin]uint64
	n    int
}

// add notes the refused call for key; one already noted, or past
// maxRejoin, is not noted again.
func (r *rejoining) add(key uint64) {
	for _, k := range r.keys[:r.n] {
		if k == key {
			return
		}
	}
	if r.n < maxRejoin {
		r.keys[r.n], r.n = key, r.n+1
	}
}
