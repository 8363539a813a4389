package core

import (
	"context"
	"encoding/binary"
	"sync"
	"time"
)

// MemoryStore is a Store in memory: the budgets built on one MemoryStore
// share one quota, one pause and one adaptive factor. It is the reference
// for other stores' behaviour; a single budget is faster without it.
type MemoryStore struct {
	epoch time.Time

	mu    sync.Mutex
	g     gcra  // guarded by mu
	aimd  aimd  // guarded by mu
	pause pause // guarded by mu
}

// NewMemoryStore returns an empty MemoryStore: an idle quota, no pause.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{epoch: time.Now(), g: newGCRA(0, 0), aimd: newAIMD()}
}

func (s *MemoryStore) now() int64 { return int64(time.Since(s.epoch)) }

// pace brings g to p at the shared factor, at now.
func (s *MemoryStore) paceLocked(p Pace, now int64) {
	interval := int64(float64(p.Interval) / s.aimd.factor)
	if s.g.interval == 0 {
		s.g.interval, s.g.burst = interval, int64(p.Burst)
		return
	}
	s.g.setPace(max(now, s.pause.until), interval, int64(p.Burst)) // never stretches a pause
}

// Take implements Store.
func (s *MemoryStore) Take(_ context.Context, p Pace, maxWait time.Duration) (Turn, error) {
	now := s.now()
	deadline := int64(never)
	if maxWait >= 0 {
		deadline = now + int64(maxWait)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paceLocked(p, now)
	t, ok := s.g.reserve(now, s.pause.until, deadline)
	tok := ""
	if ok {
		tok = memoryToken(t)
	}
	return Turn{
		Granted: ok, Wait: time.Duration(t.sendAt - now), At: t.sendAt,
		Paused: s.pause.holds(now, t.sendAt), Status: s.pause.status, Factor: s.aimd.factor,
		Token: tok,
	}, nil
}

// Refund implements Store.
func (s *MemoryStore) Refund(_ context.Context, t Turn) error {
	s.mu.Lock()
	if r, ok := parseMemoryToken(t.Token); ok {
		s.g.cancel(r.tatBefore, r.tatAfter)
	}
	s.mu.Unlock()
	return nil
}

// Report implements Store.
func (s *MemoryStore) Report(_ context.Context, r Report) (StoreStatus, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aimd.observe(r.Pace.Adaptive, r.Refused, r.Status, r.Sent, now)
	s.paceLocked(r.Pace, now)
	if r.Pause > 0 && s.pause.extend(now+int64(r.Pause), r.Status) {
		s.g.floorAfterPause(s.pause.until, int64(cmpOr(r.Allow, r.Pace.Burst)))
	}
	return s.statusLocked(now), nil
}

// Status implements Store.
func (s *MemoryStore) Status(context.Context) (StoreStatus, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(now), nil
}

func (s *MemoryStore) statusLocked(now int64) StoreStatus {
	return StoreStatus{Pause: time.Duration(max(0, s.pause.until-now)), PauseStatus: s.pause.status, Factor: s.aimd.factor}
}

// memoryToken is a MemoryStore turn's refund token: the GCRA state before
// and after the reservation, 16 bytes.
func memoryToken(t turn) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.tatBefore))
	binary.BigEndian.PutUint64(b[8:], uint64(t.tatAfter))
	return string(b[:])
}

// parseMemoryToken reads a token memoryToken wrote; anything else is not
// ok.
func parseMemoryToken(tok string) (turn, bool) {
	if len(tok) != 16 {
		return turn{}, false
	}
	return turn{
		tatBefore: int64(binary.BigEndian.Uint64([]byte(tok[:8]))),
		tatAfter:  int64(binary.BigEndian.Uint64([]byte(tok[8:]))),
	}, true
}
