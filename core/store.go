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
// it; if the budget hears of a pause meanwhile (a response it sent) that
// holds at the call's turn, the call takes a turn again, behind the pause.
// A change of the shared factor the budget sees (its own report, or the
// factor a later turn brought) re-times the waiting calls as the store
// re-times its queue: what is left of each wait stretches at a cut and
// shrinks as the factor recovers, and each call keeps its place. A pause
// another budget reported re-times only the calls that take their turn
// after it, and so does a quota report (Remaining/Reset), which shapes the
// shared pace as it does a budget's own. Check covers the store's pause
// and pace.
//
// The budget's own estimate of the quota (internal/quota) reads each
// response and reports what it decided (Report): what the fleet must
// wait, and whether the pace was too fast. See storePacer.feedback for what a fleet shares.
//
// Extra dimensions (WithDimension) are kept in the store by name: a turn
// reserves the request and every cost at once, at its send time, behind
// every turn granted before it to a budget with dimensions (FIFO across
// the fleet). Commit settles through Settle, by a budget's rules. A turn
// waits for the instant it was given: when a quota report's shape ends,
// the turns already given are not re-timed (a budget in memory re-times
// its waiting calls).
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
	// Settle settles a granted turn's costs in the extra dimensions
	// (Pace.Cost at Take) at actual, units per dimension in the order of
	// that Take's Pace.Dims, as a budget in memory settles (see
	// WithDimension): an overspend is charged from the turn's send time in
	// full (the dimension goes into debt); an underspend is given back as
	// far as no reservation made after the turn relied on it. A budget
	// settles each turn once. A Token the store does not know settles
	// nothing.
	Settle(ctx context.Context, t Turn, actual []int64) error
}

// Pace is the configured pace a budget asks a store for; the store applies
// the shared adaptive factor and the pause.
type Pace struct {
	Interval time.Duration // the configured emission interval, > 0
	Burst    int           // requests that may go back to back, >= 1
	Adaptive Adaptive      // the budget's adaptive throttling (zero: off)
	// Dims are the budget's extra dimensions (WithDimension), in its
	// order; a store keeps each by name. Nil for a budget without.
	Dims []DimPace
	// Cost is what a Take reserves in each of Dims, in units (nil or a
	// shorter slice: nothing in the rest). Take reserves them with the
	// request's turn, at its send time, all or nothing. Report ignores it.
	Cost []int64
}

// DimPace is the configured pace of one extra dimension, for a Store.
type DimPace struct {
	Name     string
	Interval time.Duration // per unit, > 0
	Burst    int64         // units that may go back to back, >= 1
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

// A Report is one response's feedback, for Store.Report, as the budget's
// estimate of the quota judged it (internal/quota): Pause is what it makes
// the whole fleet wait (the server's pause, or after a refusal what the
// estimate waits, never for answers), and Refused is set only for a
// refusal that shows the pace above the server's.
//
// The store keeps one adaptive factor for the fleet by the controller's
// rules, applied once across it: a refusal lowers it to the Factor the
// reporting budget's controller decided, once per burst (a request sent
// before the last decrease does not lower it again); a success whose quota
// report shows room (Remaining not 0, or no Reset reported) grows it along
// the CUBIC curve (cubic) from that decrease toward Plateau, the curve's
// clock running only while reports show room; other responses change
// nothing.
//
// Its quota report (Remaining, Limit, Reset, and Quotas for the extra
// dimensions) shapes the shared pace as it shapes a budget's own until the
// reset: never spend what remains faster than it returns. The zero values
// report no quota.
type Report struct {
	Status  int
	Pause   time.Duration // how long every budget on the store waits; 0 for none
	Allow   int           // how many may go at once when the pause ends (the quota's limit); 0: the burst
	Refused bool          // an adaptive decrease (a 429 without it restores nothing either)
	// Factor and Plateau, with Refused, are what the budget's controller
	// decided: the factor to lower the shared one to (its cut, or its ease
	// to the pace the server was seen keeping), and the factor to be
	// careful near as it recovers (CUBIC's W_max). The store takes them
	// when Factor is below its own and the request was sent after its
	// last decrease. 0: a cut by Pace.Adaptive.Decrease from the store's
	// factor, which is the plateau.
	Factor, Plateau float64
	Sent            int64 // when the request was sent, on the store's clock (Turn.At)
	Pace            Pace

	Remaining int           // requests the quota has left; < 0: unknown
	Limit     int           // the quota's limit; < 0: unknown
	Reset     time.Duration // until the quota is restored, at most the budget's max pause; <= 0: unknown
	Quotas    []DimQuota    // the same for extra dimensions
}

// DimQuota is a quota report for one extra dimension, by its name.
type DimQuota struct {
	Name             string
	Remaining, Limit int
	Reset            time.Duration
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
