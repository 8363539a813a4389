package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/redis/go-redis/v9"
)

// events counts the store's failure and recovery callbacks.
type events struct {
	failures, recovers atomic.Int64
	mu                 sync.Mutex
	errs               []error
}

func (e *events) opts() []Option {
	return []Option{
		WithOnFailure(func(err error) {
			e.failures.Add(1)
			e.mu.Lock()
			e.errs = append(e.errs, err)
			e.mu.Unlock()
		}),
		WithOnRecover(func() { e.recovers.Add(1) }),
	}
}

// admission is one Acquire of a load run.
type admission struct {
	at   time.Time // when Acquire returned (wall clock)
	err  error
	turn core.Turn // the turn granted, when the budget's store is a recording
}

// grantedAt is when the store granted a's turn, on its clock.
func (a admission) grantedAt() time.Time { return time.Unix(0, a.turn.At-int64(a.turn.Wait)) }

// load acquires from b on 4 goroutines until stop is closed, feeding a 200
// back for each permit, and returns every admission and failure.
func load(b *core.Budget, stop <-chan struct{}) func() []admission {
	var mu sync.Mutex
	var log []admission
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				ctx, slot := withSlot(ctx)
				p, err := b.Acquire(ctx)
				cancel()
				mu.Lock()
				log = append(log, admission{time.Now(), err, slot.last()})
				mu.Unlock()
				if err != nil {
					time.Sleep(5 * time.Millisecond) // failing fast: do not spin
					continue
				}
				p.Observe(http.StatusOK, nil)
				p.Release()
			}
		})
	}
	return func() []admission { wg.Wait(); return log }
}

// outage runs load on b, kills srv after 300 ms, restarts it 500 ms later
// and stops 600 ms after that. It returns the log and the instants of the
// kill and the restart.
func outage(t *testing.T, srv *redisServer, b *core.Budget) (log []admission, killed, restarted time.Time) {
	stop := make(chan struct{})
	wait := load(b, stop)
	time.Sleep(300 * time.Millisecond)
	killed = time.Now()
	srv.kill()
	time.Sleep(500 * time.Millisecond)
	restarted = time.Now()
	if err := srv.start(); err != nil {
		close(stop)
		wait()
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	close(stop)
	return wait(), killed, restarted
}

// TestFailClosedWhenRedisStops: Redis is killed under load and restarted.
// Failing closed, nothing is admitted while it is down: Acquire returns the
// store's *Error (matching ErrUnavailable) at once, OnFailure reports it,
// no slot leaks and nothing panics; when Redis is back the budget admits
// again and OnRecover is called once per outage the budget saw.
func TestFailClosedWhenRedisStops(t *testing.T) {
	srv := ownRedis(t)
	var ev events
	s, err := New(newClient(t, srv.addr), testKey(t),
		// A killed Redis refuses connections at once; the timeout is long so
		// that a loaded machine's slow reply is not a second outage (and a
		// second recovery event).
		append(ev.opts(), WithTimeout(100*time.Millisecond), WithProbeInterval(50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	var ce coreEvents
	b := core.MustBudget(core.PerSecond(100), core.WithStore(record(s)), core.WithMaxInFlight(4), core.WithObserver(ce.observe))
	log, killed, restarted := outage(t, srv, b)
	ce.check(t)

	var before, during, after, errs, skipped int
	for _, a := range log {
		if a.err != nil {
			errs++
			var se *Error
			if errors.As(a.err, &se) && se.Skipped {
				skipped++
			}
			if !errors.Is(a.err, ErrUnavailable) || !errors.As(a.err, &se) || se.Op != "take" ||
				!strings.HasPrefix(a.err.Error(), "headgate: redis store take: ") {
				t.Fatalf("Acquire failed with %v (%T), want the store's *Error for take", a.err, a.err)
			}
			if a.at.Before(killed) {
				t.Errorf("an error before Redis was stopped: %v", a.err)
			}
			continue
		}
		// By when Redis granted the turn (on its clock), not when Acquire
		// returned: a call whose turn came before the kill may return
		// after it on a loaded machine.
		if a.turn.Fallback != nil || !a.turn.Granted {
			during++ // a turn Redis did not grant
			continue
		}
		switch at := a.grantedAt(); {
		case at.Before(killed):
			before++
		case at.Before(restarted):
			during++
		default:
			after++
		}
	}
	t.Logf("admitted %d before, %d during, %d after the outage; %d errors; %d failure events, %d recoveries",
		before, during, after, errs, ev.failures.Load(), ev.recovers.Load())
	if before == 0 || after == 0 {
		t.Errorf("admitted %d before and %d after the outage, want some of each", before, after)
	}
	if during > 0 {
		t.Errorf("failing closed, %d calls were admitted while Redis was down", during)
	}
	if errs == 0 || ev.failures.Load() == 0 {
		t.Errorf("%d errors and %d failure events during the outage, want some", errs, ev.failures.Load())
	}
	// One call probes Redis per probe interval; the others fail at once,
	// without a call to Redis.
	if skipped < errs/2 {
		t.Errorf("%d of %d failed calls tried Redis, want most to fail at once between probes", errs-skipped, errs)
	}
	// One recovery per outage the budget saw: on a loaded machine a slow
	// reply after the restart can be an outage of its own.
	if n, outages := ev.recovers.Load(), ce.failures.Load(); n < 1 || n != int64(outages) {
		t.Errorf("%d recovery events for %d outages, want one per outage", n, outages)
	}
	if n := b.InFlight(); n != 0 {
		t.Errorf("%d slots still held", n)
	}
	if !s.Healthy() {
		t.Error("the store is not healthy after Redis came back")
	}
}

// TestFailOpenWhenRedisStops: failing open at half the rate, every call is
// admitted while Redis is down, paced by the local fallback (half the rate,
// half the burst); OnFailure reports the outage, and when Redis is back the
// budget spends from Redis again and OnRecover is called once per outage the budget saw.
func TestFailOpenWhenRedisStops(t *testing.T) {
	srv := ownRedis(t)
	var ev events
	c := newClient(t, srv.addr)
	s, err := New(c, testKey(t),
		// A killed Redis refuses connections at once; the timeout is long so
		// that a loaded machine's slow reply is not a second outage (and a
		// second recovery event).
		append(ev.opts(), WithFailOpen(0.5), WithTimeout(100*time.Millisecond), WithProbeInterval(50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	var ce coreEvents
	b := core.MustBudget(core.PerSecond(100), core.WithBurst(4), core.WithStore(record(s)), core.WithObserver(ce.observe))
	log, killed, restarted := outage(t, srv, b)
	ce.check(t)

	// The turns the fallback granted, on its clock: it alone paces the
	// calls while Redis is down. Checked exactly, as a loaded machine
	// cannot move them.
	var fallback []core.Turn
	var before, after int
	for _, a := range log {
		if a.err != nil {
			t.Fatalf("failing open, Acquire failed: %v", a.err)
		}
		switch {
		case a.turn.Fallback != nil:
			fallback = append(fallback, a.turn)
		case a.grantedAt().Before(killed):
			before++
		case a.grantedAt().After(restarted):
			after++
		}
	}
	slices.SortStableFunc(fallback, func(a, b core.Turn) int { return cmp.Compare(a.At, b.At) })
	queued := checkNoIdleQueue(t, fallback, 20*time.Millisecond, 0)
	t.Logf("admitted %d before, %d from the fallback (%d of them queued), %d after; %d failure events, %d recoveries",
		before, len(fallback), queued, after, ev.failures.Load(), ev.recovers.Load())
	if err := quotatest.CheckTimes(turnTimes(fallback), 2, 20*time.Millisecond, 0); err != nil {
		t.Errorf("during the outage the fallback broke half the budget (50/s, burst 2): %v", err)
	}
	if queued == 0 {
		t.Error("no call waited for a turn from the fallback: the test did not check its pace")
	}
	if before == 0 || after == 0 {
		t.Errorf("admitted %d before and %d after the outage, want some of each", before, after)
	}
	if ev.failures.Load() == 0 {
		t.Error("no failure event during the outage")
	}
	// One recovery per outage the budget saw: on a loaded machine a slow
	// reply after the restart can be an outage of its own.
	if n, outages := ev.recovers.Load(), ce.failures.Load(); n < 1 || n != int64(outages) {
		t.Errorf("%d recovery events for %d outages, want one per outage", n, outages)
	}
	if n := c.Exists(context.Background(), s.state[0]).Val(); n != 1 {
		t.Error("after the restart the budget's state is not back in Redis")
	}
}

// TestFailOpenKeepsThePause: a pause heard while Redis was up holds the
// fallback too when Redis goes down.
func TestFailOpenKeepsThePause(t *testing.T) {
	srv := ownRedis(t)
	s, err := New(newClient(t, srv.addr), testKey(t), WithFailOpen(1), WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b := core.MustBudget(core.PerSecond(100), core.WithStore(s))
	p, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
	srv.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = b.Acquire(ctx)
	var rl *core.RateLimitError
	if !errors.As(err, &rl) || rl.Reason != core.Paused || rl.StatusCode != 429 {
		t.Fatalf("Acquire during the pause with Redis down = %v, want the pause's RateLimitError", err)
	}
	if s.Healthy() {
		t.Error("the store says it is healthy with Redis down")
	}
	if d := b.PauseRemaining(); d < time.Second {
		t.Errorf("PauseRemaining with Redis down = %v, want the fallback's pause (over 1s)", d)
	}
}

// TestFailOpenRefundsFallbackTurns: with Redis down, a call cancelled
// while it waits for a turn the fallback gave gives it back to the
// fallback, so the next call takes it.
func TestFailOpenRefundsFallbackTurns(t *testing.T) {
	srv := ownRedis(t)
	s, err := New(newClient(t, srv.addr), testKey(t), WithFailOpen(1), WithTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	srv.kill()
	// A turn a minute: no stall moves a turn, and no call waits for one.
	rs := record(s)
	b := core.MustBudget(core.PerMinute(1), core.WithBurst(1), core.WithStore(rs))
	if _, err := b.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	first, err := rs.cancelWhileWaiting(t, b)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	if first.Fallback == nil {
		t.Fatal("with Redis down the turn did not come from the fallback")
	}
	next, _ := rs.cancelWhileWaiting(t, b)
	if next.At != first.At {
		t.Fatalf("the next call's turn is %v after the cancelled call's, want that very turn",
			time.Duration(next.At-first.At))
	}
}

// TestSlowRedisTimesOut: a Redis that does not answer (CLIENT PAUSE) costs
// a call no more than WithTimeout, whether or not the client honours
// context deadlines itself: a store failing closed returns an *Error that
// does not look like the caller's deadline; one failing open grants a turn
// from the fallback. When Redis answers again, so does the store.
func TestSlowRedisTimesOut(t *testing.T) {
	srv := ownRedis(t)
	admin := newClient(t, srv.addr)
	plain := redis.NewClient(&redis.Options{Addr: srv.addr}) // no ContextTimeoutEnabled: reads wait 3 s
	t.Cleanup(func() { plain.Close() })
	p := core.Pace{Interval: 10 * time.Millisecond, Burst: 2}
	ctx := context.Background()
	type store struct {
		name string
		s    *Store
	}
	var stores []store
	for _, c := range []struct {
		name string
		c    *redis.Client
	}{{"ContextTimeoutEnabled", newClient(t, srv.addr)}, {"plain client", plain}} {
		for _, fail := range []Option{WithFailClosed(), WithFailOpen(0.5)} {
			s, err := New(c.c, testKey(t), fail, WithTimeout(50*time.Millisecond), WithProbeInterval(0))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Take(ctx, p, -1); err != nil { // connections are open
				t.Fatal(err)
			}
			stores = append(stores, store{c.name + ", fail open " + strconv.FormatBool(s.fb != nil), s})
		}
	}
	// Redis pauses for 2 s, far longer than the four Takes below need even
	// on a loaded machine, so each meets a Redis that does not answer.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 2000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	for _, st := range stores {
		if want := strings.HasPrefix(st.name, "ContextTimeoutEnabled"); st.s.ctxTimeouts != want {
			t.Errorf("%s: the store runs calls on the caller's goroutine: %v, want %v", st.name, st.s.ctxTimeouts, want)
		}
		start := time.Now()
		turn, err := st.s.Take(ctx, p, -1)
		// A generous limit, for a loaded machine: the timeout is 50 ms; the
		// failure it guards against (the plain client's read) waits 3 s.
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("%s: Take on a paused Redis took %v, want about the 50ms timeout, not the client's 3s read", st.name, took)
		}
		if st.s.fb != nil {
			if err != nil || !turn.Granted {
				t.Errorf("%s: Take on a paused Redis = %+v, %v, want a turn from the fallback", st.name, turn, err)
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no reply within 50ms") {
			t.Errorf("%s: Take on a paused Redis = %v, want the store's timeout error", st.name, err)
		}
	}
	time.Sleep(time.Until(paused.Add(2100 * time.Millisecond)))
	for _, st := range stores {
		if _, err := st.s.Take(ctx, p, -1); err != nil || !st.s.Healthy() {
			t.Errorf("%s: after the pause: %v, healthy %v", st.name, err, st.s.Healthy())
		}
	}
}

// coreEvents counts the budget's own StoreFailure and StoreRecovered
// events: one of each per outage, whichever way the store fails.
type coreEvents struct{ failures, recoveries atomic.Int32 }

func (c *coreEvents) observe(e core.Event) {
	switch e.Reason {
	case core.StoreFailure:
		if !errors.Is(e.Err, ErrUnavailable) {
			panic("StoreFailure event without the store's error: " + fmt.Sprint(e.Err))
		}
		c.failures.Add(1)
	case core.StoreRecovered:
		c.recoveries.Add(1)
	}
}

func (c *coreEvents) check(t *testing.T) {
	t.Helper()
	f, r := c.failures.Load(), c.recoveries.Load()
	if f == 0 || f != r {
		t.Errorf("budget events: %d StoreFailure, %d StoreRecovered; want one of each per outage", f, r)
	}
}

// TestFailOpenTinyShareNeverOverflows: a fallback at a share so small that
// its interval saturates still never gives two turns at once: the turn
// after a queued one is not due for years, not granted at once by a
// schedule that wrapped negative.
func TestFailOpenTinyShareNeverOverflows(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: every call to Redis is refused
	s, err := New(newClient(t, addr), testKey(t), WithFailOpen(1e-300), WithTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pace := core.Pace{Interval: 200 * time.Millisecond, Burst: 5, Adaptive: core.DefaultAdaptive()}
	first, err := s.Take(ctx, pace, -1)
	if err != nil || !first.Granted || first.Wait != 0 {
		t.Fatalf("first Take = %+v, %v; want a turn at once from the fallback", first, err)
	}
	queued, err := s.Take(ctx, pace, -1) // no deadline: granted, years ahead
	if err != nil || !queued.Granted || queued.Wait < 365*24*time.Hour {
		t.Fatalf("second Take = %+v, %v; want a turn years ahead", queued, err)
	}
	if third, err := s.Take(ctx, pace, time.Nanosecond); err != nil || third.Granted {
		t.Errorf("third Take = %+v, %v; want no turn now (the schedule overflowed)", third, err)
	}
}

// TestFailClosedKeepsTheCause: after Redis is killed, the client's
// retries outlast the store's timeout and its own error is lost; the
// store's errors still name the refused connection (errors.Is
// ECONNREFUSED), not only the timeout, with and without
// ContextTimeoutEnabled.
func TestFailClosedKeepsTheCause(t *testing.T) {
	srv := ownRedis(t)
	srv.kill()
	for _, ctxTimeouts := range []bool{true, false} {
		c := redis.NewClient(&redis.Options{Addr: srv.addr, ContextTimeoutEnabled: ctxTimeouts})
		t.Cleanup(func() { c.Close() })
		s, err := New(c, testKey(t))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for {
			_, err = s.Take(context.Background(), core.Pace{Interval: time.Second, Burst: 1}, -1)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("ContextTimeoutEnabled %v: Take after Redis was killed = %v, want ErrUnavailable", ctxTimeouts, err)
			}
			if errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("ContextTimeoutEnabled %v: Take after Redis was killed = %v, want the refused connection as its cause", ctxTimeouts, err)
		}
	}
}

// TestFailOpenSharesTokensInTheFallback: with Redis out of reach, a budget
// with a tokens dimension failing open at half spends its tokens from the
// fallback at half the rate and burst: the fallback's burst of 100 (of
// 200) goes at once, the next 10 wait for their return (100 ms at 100
// tokens/s), and an underspend committed comes back.
func TestFailOpenSharesTokensInTheFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: every call to Redis is refused
	s, err := New(newClient(t, addr), testKey(t), WithFailOpen(0.5), WithTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b := core.MustBudget(core.PerSecond(1000), core.WithStore(s), core.WithDimension("tokens", core.PerSecond(200)))
	ctx := context.Background()
	p, err := b.AcquireCost(ctx, core.Cost{Dimension: "tokens", Amount: 100})
	if err != nil {
		t.Fatalf("100 tokens from the fallback: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := b.AcquireCost(short, core.Cost{Dimension: "tokens", Amount: 10}); !core.IsBudgetError(err) {
		t.Fatalf("10 more tokens with 50ms to wait = %v, want a RateLimitError (the fallback's burst is 100)", err)
	}
	p.Commit(core.Cost{Dimension: "tokens", Amount: 70}) // 30 come back
	p.Release()
	short2, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	q, err := b.AcquireCost(short2, core.Cost{Dimension: "tokens", Amount: 30})
	if err != nil {
		t.Fatalf("30 tokens after 30 came back = %v, want them at once", err)
	}
	q.Release()
}
