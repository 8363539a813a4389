package core

import "time"

// A Reason says why the budget made a call wait, or what changed.
type Reason uint8

const (
	// Paced: the call waited for its turn at the configured rate.
	Paced Reason = iota + 1
	// Throttled: the call waited for its turn at a rate that adaptive
	// throttling or the server's reported quota lowered.
	Throttled
	// Paused: the call waited for a pause the server asked for.
	Paused
	// Pushback: a response asked the budget to pause (one event per such
	// response). Status and Wait (the pause it asked for) are set.
	Pushback
	// RateChanged: the effective rate changed (adaptive decrease or
	// recovery, SetRate). OldRate and NewRate are set.
	RateChanged
	// SlotWait: the call waited for a free concurrency slot
	// (WithMaxInFlight).
	SlotWait
	// LeakedBody: a response body was never closed and the garbage
	// collector freed its slot. Close every body: until the collector runs,
	// the slot is held.
	LeakedBody
	// StoreFailure: the budget's Store (WithStore) failed, or answered from
	// a local fallback; Err says why. Reported once when the store goes
	// down, not for every call while it stays down.
	StoreFailure
	// StoreRecovered: the Store answers again after a StoreFailure.
	StoreRecovered
)

var reasonNames = [...]string{
	Paced:          "paced",
	Throttled:      "throttled",
	Paused:         "paused",
	Pushback:       "pushback",
	RateChanged:    "rate_changed",
	SlotWait:       "slot_wait",
	LeakedBody:     "leaked_body",
	StoreFailure:   "store_failure",
	StoreRecovered: "store_recovered",
}

// String returns the reason in lower case: "paced", "throttled", "paused",
// "pushback", "rate_changed", "slot_wait", "leaked_body", "store_failure",
// "store_recovered".
func (r Reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return "unknown"
}

// An Event reports one thing the budget did: a wait it made a call take, a
// response that paused it, a change of rate. Events never carry request
// URLs, headers or credentials.
type Event struct {
	Budget string        // the budget's name (WithName), or ""
	Reason Reason        // what happened
	Wait   time.Duration // the wait (Paced, Throttled, Paused, SlotWait) or the pause asked for (Pushback)
	Status int           // the response status (Pushback, and RateChanged caused by a response)
	// OldRate and NewRate are the effective rates before and after a
	// RateChanged event, in requests per second.
	OldRate, NewRate float64
	// Err is the store's error (StoreFailure).
	Err error
}

// An Observer receives the budget's events. It is called outside any lock,
// on the goroutine of the call the event concerns, so it may call back into
// the budget; it should return quickly.
type Observer func(Event)
