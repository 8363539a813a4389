package core

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/headgate-go/headgate/core/internal/shape"
	"github.com/headgate-go/headgate/core/ratelimit"

	"github.com/headgate-go/headgate/core/internal/fleet"
	"github.com/headgate-go/headgate/core/internal/gcra"
	"github.com/headgate-go/headgate/core/internal/memtoken"
)

// MemoryStore is a Store in memory: the budgets built on one MemoryStore
// share one quota, one pause and one adaptive factor. It is the reference
// for other stores' behaviour; a single budget is faster without it.
type MemoryStore struct {
	epoch time.Time

	mu    sync.Mutex
	g     gcra.State   // guarded by mu
	f     fleet.Factor // guarded by mu
	pause pause        // guarded by mu
	// dims are the extra dimensions by name, created by the first Take or
	// Report that names them; guarded by mu.
	dims map[string]*storeDim
	// shape is what the last quota report for requests allows, and
	// dimShapes the same per extra dimension, by name; guarded by mu.
	shape     shape.Pace
	dimShapes map[string]shape.Pace
	// last is the latest send time granted to a budget with extra
	// dimensions: such turns are served in the order they are taken
	// (FIFO), as a budget's own queue serves them; guarded by mu.
	last int64
}

// NewMemoryStore returns an empty MemoryStore: an idle quota, no pause.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{epoch: time.Now(), g: gcra.New(0, 0), f: fleet.New(), last: idle}
}

func (s *MemoryStore) now() int64 { return int64(time.Since(s.epoch)) }

// pace brings g to p at the shared factor, at now.
// The shared factor and the quota report slow it, as a budget's controller
// does (controller.pace).
func (s *MemoryStore) paceLocked(p Pace, now int64) {
	interval, burst := s.shape.Slow(now, int64(float64(p.Interval)/s.f.Value()), int64(p.Burst))
	if s.g.Interval == 0 {
		s.g.Interval, s.g.Burst = interval, burst
		return
	}
	s.g.SetPace(max(now, s.pause.until), interval, burst) // never stretches a pause
}

// dimsLocked brings the extra dimensions of p to their configured pace at
// now (created idle when new) and returns them in p's order.
func (s *MemoryStore) dimsLocked(p Pace, now int64) []*storeDim {
	if len(p.Dims) == 0 {
		return nil
	}
	if s.dims == nil {
		s.dims = make(map[string]*storeDim)
	}
	gs := make([]*storeDim, len(p.Dims))
	for i, d := range p.Dims {
		iv, bu := s.dimShapes[d.Name].Slow(now, int64(d.Interval), d.Burst)
		g := s.dims[d.Name]
		if g == nil {
			g = &storeDim{g: gcra.State{TAT: idle, Interval: iv, Burst: bu}}
			s.dims[d.Name] = g
		}
		g.setPace(max(now, s.pause.until), iv, bu)
		gs[i] = g
	}
	return gs
}

// Take implements Store. With extra dimensions (p.Dims), the turn comes
// when every dimension holds its cost, and no sooner than any turn granted
// before it to a budget with extra dimensions; the turn and each cost are
// charged at the turn's send time, as a budget's own reservation is.
func (s *MemoryStore) Take(_ context.Context, p Pace, maxWait time.Duration) (Turn, error) {
	now := s.now()
	deadline := int64(never)
	if maxWait >= 0 {
		deadline = now + int64(maxWait)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paceLocked(p, now)
	gs := s.dimsLocked(p, now)
	notBefore := s.pause.until
	if gs != nil {
		notBefore = max(notBefore, s.last)
		for i, g := range gs {
			if n := costAt(p.Cost, i); n > 0 {
				notBefore = max(notBefore, g.g.Earliest(n))
			}
		}
	}
	var t gcra.Turn
	var ok bool
	if gs == nil {
		t, ok = s.g.Reserve(now, notBefore, deadline)
	} else {
		t, ok = s.g.ReserveAt(now, notBefore, deadline)
	}
	tok := ""
	if ok {
		tok = memtoken.New(t.TATBefore, t.TATAfter)
		if gs != nil {
			tok = s.reserveDimsLocked(tok, t.SendAt, p, gs)
		}
	}
	return Turn{
		Granted: ok, Wait: time.Duration(t.SendAt - now), At: t.SendAt,
		Paused: s.pause.holds(now, t.SendAt), Status: s.pause.status, Factor: s.f.Value(),
		Token: tok,
	}, nil
}

// costAt is the cost in dimension i (0 past the end or below zero).
func costAt(cost []int64, i int) int64 {
	if i < len(cost) {
		return max(0, cost[i])
	}
	return 0
}

// reserveDimsLocked spends p's costs at sendAt and returns tok extended
// with what Refund and Settle need (memtoken.AppendDims, AppendDim).
func (s *MemoryStore) reserveDimsLocked(tok string, sendAt int64, p Pace, gs []*storeDim) string {
	b := memtoken.AppendDims(tok, s.last, sendAt)
	s.last = sendAt
	for i, g := range gs {
		n := costAt(p.Cost, i)
		before, after, seq := g.reserve(sendAt, n)
		b = memtoken.AppendDim(b, memtoken.Dim{Before: before, After: after, N: n, Seq: seq, Name: p.Dims[i].Name})
	}
	return string(b)
}

// Refund implements Store.
func (s *MemoryStore) Refund(_ context.Context, t Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := memtoken.Parse(t.Token)
	if !ok {
		return nil
	}
	last := s.g.Cancel(r.TATBefore, r.TATAfter) // nobody took a turn after it
	if r.Dims == nil {
		return nil
	}
	if last {
		s.last = r.LastBefore
	}
	for _, d := range r.Dims {
		if g := s.dims[d.Name]; g != nil {
			g.cancel(d.Before, d.After, d.Seq)
		}
	}
	return nil
}

// Settle implements Store.
func (s *MemoryStore) Settle(_ context.Context, t Turn, actual []int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := memtoken.Parse(t.Token)
	if !ok {
		return nil
	}
	for i, d := range r.Dims {
		if g := s.dims[d.Name]; g != nil {
			g.settle(r.SendAt, d.N, costAt(actual, i), d.Seq)
		}
	}
	return nil
}

// Report implements Store.
func (s *MemoryStore) Report(_ context.Context, r Report) (StoreStatus, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Pace.Adaptive.Enabled() {
		room := r.Remaining != 0 || r.Reset <= 0
		s.f.Observe(fleet.Adaptive(r.Pace.Adaptive), fleet.Report{Status: r.Status, Refused: r.Refused,
			Factor: r.Factor, Plateau: r.Plateau, Sent: r.Sent, Room: room}, now, s.pause.until)
	}
	s.shapeLocked(r, now)
	s.paceLocked(r.Pace, now)
	s.dimsLocked(r.Pace, now) // re-paced now, as a budget re-paces on a report
	if r.Pause > 0 && s.pause.extend(now+int64(r.Pause), r.Status) {
		s.g.FloorAfterPause(s.pause.until, int64(cmpOr(r.Allow, r.Pace.Burst)))
	}
	return s.statusLocked(now), nil
}

// shapeLocked keeps the quota reports of r, at now, by the rules of a
// budget's controller (shape.Of; a pause that lasts until the reset covers
// the report's window).
func (s *MemoryStore) shapeLocked(r Report, now int64) {
	q := ratelimit.Feedback{Remaining: r.Remaining, Limit: r.Limit, Reset: r.Reset}
	if sh, ok := shape.Of(q, now, math.MaxInt64); ok && (r.Pause == 0 || r.Reset > r.Pause) {
		s.shape = sh
	}
	for _, d := range r.Quotas {
		if sh, ok := shape.Of(ratelimit.Feedback{Remaining: d.Remaining, Limit: d.Limit, Reset: d.Reset}, now, math.MaxInt64); ok {
			if s.dimShapes == nil {
				s.dimShapes = make(map[string]shape.Pace)
			}
			s.dimShapes[d.Name] = sh
		}
	}
}

// Status implements Store.
func (s *MemoryStore) Status(context.Context) (StoreStatus, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(now), nil
}

// Adopt brings the store up to the shared state another store reported:
// a pause that lasts at least st.Pause from now (with st.PauseStatus; a
// longer pause is kept), and the adaptive factor st.Factor, a lower one
// counted as decreased just now from the factor before. A store that fails open over to a
// MemoryStore (redisstore's WithFailOpen) adopts each status its shared
// store returns, so that it starts from what the fleet knew.
func (s *MemoryStore) Adopt(st StoreStatus) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Pause > 0 && s.pause.extend(now+int64(st.Pause), st.PauseStatus) && s.g.Interval > 0 {
		s.g.FloorAfterPause(s.pause.until, 1) // what the server holds then is not known here
	}
	s.f.Adopt(st.Factor, now)
}

func (s *MemoryStore) statusLocked(now int64) StoreStatus {
	return StoreStatus{Pause: time.Duration(max(0, s.pause.until-now)), PauseStatus: s.pause.status, Factor: s.f.Value()}
}
