package core

import (
	"context"
	"time"
)

// A Store holds a budget's pacing state — the GCRA arrival time, the
// server's pause and the adaptive factor — somewhere several budgets can
// share it: every budget built WithStore on the same store spends from one
// quota, and a pause or a rate decrease one of them sees applies to all.
// The redisstore module keeps it in Redis for a fleet of processes;
// MemoryStore keeps it in memory.
//
// Times in Turn and Report are on the store's own clock (nanoseconds), so
// the clocks of the processes sharing a store do not matter. Methods must be
// safe for concurrent use; they are called outside the budget's lock.
//
// A budget on a store still serves its own callers' slots locally
// (WithMaxInFlight is per budget). A call waits for the turn the store gave
// it; if the budget hears of a pause meanwhile (a response it sent), the
// call takes a turn again behind the pause. A pause or decrease another
// budget reported re-times only the calls that take their turn after it,
// and the quota reports (Remaining/Reset) that shape an in-memory budget's
// pace are not shared. Check covers the store's pause, not its pace.
type Store interface {
	// Take reserves the next turn at pace p, not before the end of the
	// shared pause. If the turn would come maxWait or more from now
	// (maxWait < 0: no limit), nothing is reserved and Turn.Granted is
	// false.
	Take(ctx context.Context, p Pace, maxWait time.Duration) (Turn, error)
	// Refund gives a granted turn back if nobody took a turn after it. The
	// store finds the reservation by t.Token; a Token it does not know (or
	// no longer holds) refunds nothing.
	Refund(ctx context.Context, t Turn) error
	// Report applies a response's feedback — the pause it asked for, and
	// adaptive throttling — and returns the state after it.
	Report(ctx context.Context, r Report) (StoreStatus, error)
	// Status returns the time left in the shared pause and the status of the
	// response that set it, and the adaptive factor.
	Status(ctx context.Context) (StoreStatus, error)
}

// Pace is the configured pace a budget asks a store for; the store applies
// the shared adaptive factor and the pause.
type Pace struct {
	Interval time.Duration // the configured emission interval, > 0
	Burst    int           // requests that may go back to back, >= 1
	Adaptive Adaptive      // the budget's adaptive throttling (zero: off)
}

// A Turn is a reservation a store granted (or refused).
type Turn struct {
	Granted bool          // false: the turn came at or after maxWait; nothing reserved
	Wait    time.Duration // from the store's now until the turn
	At      int64         // the turn on the store's clock
	Paused  bool          // the turn was held back by a server pause
	Status  int           // the status that set that pause
	Factor  float64       // the adaptive factor the turn was paced at
	// Token identifies the reservation for Refund; "" when nothing was
	// reserved (Granted is false). Its content is the store's own (core
	// only hands it back), so a store may change how it keeps its state
	// without changing this interface.
	Token string
	// Fallback is non-nil when the store could not reach its shared state
	// and answered from a local fallback (failing open); it says why.
	Fallback error
}

// A Report is one response's feedback, for Store.Report.
type Report struct {
	Status  int
	Pause   time.Duration // the pause the response asked for; 0 for none
	Allow   int           // how many may go at once when the pause ends (the quota's limit); 0: the burst
	Refused bool          // a 429, 503 or spent quota: an adaptive decrease
	Sent    int64         // when the request was sent, on the store's clock (Turn.At)
	Pace    Pace
}

// StoreStatus is what Store.Status reports.
type StoreStatus struct {
	Pause       time.Duration
	PauseStatus int
	Factor      float64
	Fallback    error // as in Turn: answered from a local fallback, and why
}

// WithStore keeps the budget's pacing state in s instead of in the budget,
// so several budgets (in several processes) spend from one quota. The
// in-memory state is the default and the fast path.
func WithStore(s Store) Option {
	return optionFunc(func(c *config) { c.store = s })
}
