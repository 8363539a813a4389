package core

import (
	"context"
	"math"
	"strconv"

	"github.com/headgate-go/headgate/core/internal/gcra"
	"github.com/headgate-go/headgate/core/internal/list"
	"github.com/headgate-go/headgate/core/internal/shape"
)

// Several dimensions (LLM-style quotas).
//
// A budget built with WithDimension paces, beside its requests, one or more
// named quantities such as tokens. Every dimension is a GCRA of its own (its
// rate in units per period, its burst in units), and a request reserves an
// upper bound of its cost in every dimension at once, all or nothing, from
// the budget's one FIFO: a request's send time is the earliest instant at
// which every dimension holds its cost, and no later than any caller queued
// before it. Nothing is ever held in one dimension while another is
// awaited, so there is no deadlock.
//
// After the reply, Permit.Commit settles the actual cost: an overspend is
// charged in full (the dimension goes into debt, which later requests wait
// out), an underspend is given back as far as it can be without letting any
// window exceed the dimension's bound: in full when nobody reserved after
// the request in that dimension, otherwise only the part no later
// reservation has already relied on. A request that is never committed
// (Release without Commit) gives its whole estimate back on the same terms.
// The request's own turn stays spent either way.

// Cost is an amount of one dimension a request spends: an estimate given
// to AcquireCost, or the actual amount given to Commit.
type Cost struct {
	Dimension string // a name declared with WithDimension
	Amount    int64  // units of that dimension, not negative
}

// A DimensionOption configures one dimension of WithDimension.
type DimensionOption interface{ applyDim(*dimConfig) }

type dimOptionFunc func(*dimConfig)

func (f dimOptionFunc) applyDim(d *dimConfig) { f(d) }

type dimConfig struct {
	name  string
	rate  Rate
	burst int64
}

// WithDimensionBurst sets how many units of a dimension may be spent back to
// back from idle. The default is the dimension rate's Requests (the whole
// quota per period); n must be at least 1.
func WithDimensionBurst(n int64) DimensionOption {
	return dimOptionFunc(func(d *dimConfig) { d.burst = n })
}

// WithDimension adds a named dimension to the budget, paced at r (r.Requests
// units per r.Period; PerMinute(90_000) is 90,000 tokens per minute). The
// name is what Costs and server quota reports (ratelimit.Quota's Unit or
// Name) refer to; it must be non-empty, unique, and not "requests", which is
// the budget's own dimension. The burst is r.Requests unless
// WithDimensionBurst says otherwise. A budget has no extra dimension by
// default. On a budget WithStore, the dimensions are kept in the store by
// name, shared with every budget on it (see Store.Settle for how a commit
// settles there).
func WithDimension(name string, r Rate, opts ...DimensionOption) Option {
	return optionFunc(func(c *config) {
		field := "WithDimension(" + strconv.Quote(name) + ")"
		d := dimConfig{name: name, rate: r, burst: int64(r.Requests)}
		for _, o := range opts {
			if o != nil {
				o.applyDim(&d)
			}
		}
		rateErr := r.validate(field)
		switch {
		case name == "":
			c.fail(configErrorf("WithDimension", "needs a name"))
		case name == "requests":
			c.fail(configErrorf(field, "is the budget's own dimension"))
		case rateErr != nil: // before the burst, which defaults to the rate's Requests
			c.fail(rateErr)
		case d.burst < 1:
			c.fail(configErrorf(field+".burst", "must be at least 1, got %d", d.burst))
		case float64(r.Interval())*float64(d.burst) > maxSpan: // as checkSpan for the rate
			c.fail(configErrorf(field, "spans more than 73 years (burst %d × interval %v)", d.burst, r.Interval()))
		}
		for _, o := range c.dims {
			if o.name == name {
				c.fail(configErrorf(field, "is declared twice"))
			}
		}
		c.dims = append(c.dims, d)
	})
}

// dim is one extra dimension: its name and its GCRA, in units.
type dim struct {
	shape    shape.Pace // what the server's last quota report for it allows (dims_pace.go); guarded by mu
	name     string
	interval int64      // configured emission interval, per unit
	burst    int64      // configured burst, in units
	g        gcra.State // at the effective pace; guarded by the budget's mu
}

// dimSet holds a budget's extra dimensions.
type dimSet struct {
	backfill bool // WithBackfill
	d        []dim
	pending  list.List[reservation, *reservation] // reserved with an extra cost and not settled; guarded by mu
}

func newDimSet(cfgs []dimConfig, backfill bool) *dimSet {
	s := &dimSet{d: make([]dim, len(cfgs)), backfill: backfill}
	for i, c := range cfgs {
		iv := int64(c.rate.Interval())
		s.d[i] = dim{name: c.name, interval: iv, burst: c.burst,
			g: gcra.New(iv, c.burst)}
	}
	return s
}

// index returns the position of the dimension named name, or -1.
func (s *dimSet) index(name string) int {
	for i := range s.d {
		if s.d[i].name == name {
			return i
		}
	}
	return -1
}

// A reservation is one request's estimate in every extra dimension, with
// what is needed to settle it. Its fields are guarded by the budget's mu.
type reservation struct {
	n         []int64 // estimated units per dimension
	tatBefore []int64 // each dimension's tat before the reservation
	tatAfter  []int64 // and after it
	// slack is, per dimension, how much of this reservation (in ns of the
	// dimension's timeline) can still be given back without moving a
	// granted reservation made after it: min over those of (tat before it −
	// the instant it consumed at). math.MaxInt64 when none was granted.
	// (Queued reservations do not count: they are re-timed instead.)
	slack     []int64
	granted   bool  // its request was given its turn
	sendAt    int64 // when it consumes (its send time)
	inPending bool  // in the dimSet's pending list
	settled   bool
	storeTurn Turn // the store's turn (WithStore), for Store.Settle
	list.Link[reservation]
}

// newReservation returns a reservation of n (nil: nothing) in every
// dimension. (Not inlined: takeTurn's frame stays small, scheduler.go.)
//
//go:noinline
func (s *dimSet) newReservation(n []int64) *reservation {
	k := len(s.d)
	if n == nil {
		n = make([]int64, k)
	}
	buf := make([]int64, 3*k)
	return &reservation{n: n, tatBefore: buf[:k], tatAfter: buf[k : 2*k], slack: buf[2*k:]}
}

func (r *reservation) hasCost() bool {
	for _, n := range r.n {
		if n > 0 {
			return true
		}
	}
	return false
}

// track adds r to the pending reservations, once.
func (s *dimSet) track(r *reservation) {
	if !r.inPending {
		s.pending.Push(r)
		r.inPending = true
	}
}

// untrack takes r out of the pending reservations, if it is there.
func (s *dimSet) untrack(r *reservation) {
	if r.inPending {
		s.pending.Remove(r)
		r.inPending = false
	}
}

// costVector turns costs into units per dimension, checking every name and
// amount.
func (b *Budget) costVector(costs []Cost) ([]int64, error) {
	n := make([]int64, len(b.dims.d))
	for _, c := range costs {
		i := b.dims.index(c.Dimension)
		if i < 0 {
			return nil, &dimError{err: ErrUnknownDimension, name: c.Dimension}
		}
		n[i] += c.Amount
		if c.Amount < 0 || n[i] > b.dims.d[i].burst { // the configured burst: read-only
			return nil, &dimError{err: ErrCostTooLarge, name: c.Dimension, amount: n[i], burst: b.dims.d[i].burst}
		}
	}
	return n, nil
}

// AcquireCost is Acquire for a request that also spends costs, its upper
// bound in extra dimensions (WithDimension): it waits until every dimension
// holds its cost and the request's turn has come, reserving them all at
// once, behind every caller already waiting. Dimensions left out cost
// nothing. A dimension the budget does not have is an ErrUnknownDimension,
// and a cost above its dimension's burst an ErrCostTooLarge, returned at
// once. Deadlines and cancellation work as for Acquire.
//
// Settle the actual cost with Permit.Commit once the response says it;
// Release without Commit gives the estimate back. A disabled budget
// accepts any cost and never waits.
func (b *Budget) AcquireCost(ctx context.Context, costs ...Cost) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	if b.pacer == nil {
		return Permit{b: b}, nil
	}
	if b.dims == nil {
		if len(costs) > 0 {
			return Permit{}, &dimError{err: ErrUnknownDimension, name: costs[0].Dimension}
		}
		return b.Acquire(ctx)
	}
	n, err := b.costVector(costs)
	if err != nil {
		return Permit{}, err
	}
	return b.acquire(ctx, b.dims.newReservation(n), 0)
}

// spendDimsLocked spends r's cost in every extra dimension at s, its
// request's send time (for reserveLocked), and keeps what is needed to give
// it back.
func (b *Budget) spendDimsLocked(s int64, r *reservation) {
	r.sendAt = s
	for i := range b.dims.d {
		r.slack[i] = math.MaxInt64
		r.tatBefore[i], r.tatAfter[i] = b.dims.d[i].g.ReserveN(s, r.n[i])
	}
	if r.hasCost() {
		b.dims.track(r)
	}
}

// grantDimsLocked records that r's request was given its turn: from now on
// the earlier granted reservations cannot give back what r relied on.
func (b *Budget) grantDimsLocked(r *reservation) {
	r.granted = true
	for i := range b.dims.d {
		if r.n[i] == 0 {
			continue
		}
		term := max(0, r.tatBefore[i]-r.sendAt) // how far r stacks on earlier ones
		for p := b.dims.pending.Head; p != nil; p = p.Next {
			if p != r && p.granted {
				p.slack[i] = min(p.slack[i], term)
			}
		}
	}
}

// cancelDimsLocked gives a queued waiter's reservation back in every
// dimension where nobody reserved after it.
func (b *Budget) cancelDimsLocked(r *reservation) {
	for i := range b.dims.d {
		b.dims.d[i].g.Cancel(r.tatBefore[i], r.tatAfter[i])
	}
	b.dims.untrack(r)
	r.settled = true
}

// resetDimsLocked puts every dimension back to its state before r, the
// head of the queue, for retimeLocked to re-reserve the queue in order.
func (b *Budget) resetDimsLocked(r *reservation) {
	for i := range b.dims.d {
		b.dims.d[i].g.Rewind(r.tatBefore[i])
	}
}

// settleLocked settles r at actual units per dimension (see Commit), at
// now. Tokens given back while callers wait re-time them, so they use them.
func (b *Budget) settleLocked(r *reservation, actual []int64, now int64) {
	if r.settled {
		return
	}
	gave := false
	r.settled = true
	b.dims.untrack(r)
	for i := range b.dims.d {
		g := &b.dims.d[i].g
		delta := actual[i] - r.n[i]
		switch {
		case delta > 0: // overspend: charged in full, the level may go below zero
			// Charged at its send time, like the estimate; a huge usage
			// figure saturates the debt at maxSpan instead of wrapping it.
			e := int64(maxSpan)
			if delta < maxSpan/g.Interval {
				e = delta * g.Interval
			}
			g.Charge(r.sendAt, e)
			for w := b.queue.Head; w != nil; w = w.Next {
				if w.res != nil { // keep re-timing and cancels true to the charge
					w.res.tatBefore[i] = gcra.Charge(w.res.tatBefore[i], r.sendAt, e)
					w.res.tatAfter[i] = gcra.Charge(w.res.tatAfter[i], r.sendAt, e)
				}
			}
		case delta < 0: // underspend: give back what no later reservation relied on
			give := min(-delta*g.Interval, r.slack[i])
			if give <= 0 {
				continue
			}
			g.GiveBack(give)
			gave = true
			for p := b.dims.pending.Head; p != nil; p = p.Next {
				p.slack[i] = max(0, p.slack[i]-give)
			}
			// Every queued caller reserved after r and after every
			// granted reservation, so its state before and after may move
			// back by give; the re-timing below then uses it.
			for w := b.queue.Head; w != nil; w = w.Next {
				if w.res != nil {
					w.res.tatBefore[i] -= give
					w.res.tatAfter[i] -= give
				}
			}
		}
	}
	if gave && b.queue.Head != nil {
		b.retimeLocked(now)
	}
}

// Commit settles the permit's reservation at the actual costs the response
// reported (dimensions left out cost 0): the difference from the estimate
// is charged when the request spent more (the dimension goes into debt,
// counted, never clamped) and given back when it spent less (in full unless
// later reservations in that dimension already relied on it; see
// WithDimension). It is idempotent: only the first Commit, or Release,
// settles. Unknown dimensions and negative amounts are ignored. It does not
// free the permit's slot: call Release too.
func (p *Permit) Commit(actual ...Cost) {
	if p.b == nil || p.res == nil || p.b.dims == nil {
		return
	}
	b := p.b
	n := make([]int64, len(b.dims.d))
	for _, c := range actual {
		if i := b.dims.index(c.Dimension); i >= 0 && c.Amount > 0 {
			n[i] += c.Amount
		}
	}
	p.settle(n)
}

// releaseCost gives back an uncommitted estimate (Release without Commit).
func (p *Permit) releaseCost() {
	if p.res == nil || p.b.dims == nil {
		return
	}
	p.settle(make([]int64, len(p.b.dims.d)))
}

// settle settles the permit's reservation at actual units per dimension:
// in the budget, or through its Store.
func (p *Permit) settle(actual []int64) {
	p.b.pacer.settle(p.res, actual)
}
