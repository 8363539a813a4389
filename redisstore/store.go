package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/redis/go-redis/v9"
)

// A Store is a core.Store in Redis: every budget built with
// core.WithStore on a Store with the same key — in any number of processes
// — spends from one quota, and a pause or an adaptive decrease any of them
// sees applies to all. Each admitted request costs one round trip (a Lua
// script run with EVALSHA, on Redis server time).
//
// A Store is safe for concurrent use. It runs no goroutine of its own but
// the timers that renew held leases, the one timer that bounds its calls
// in flight (deadlines), one dial that diagnoses a call that timed out
// (see timedOut) and, when the client was built without
// ContextTimeoutEnabled, one per call to Redis, so that WithTimeout bounds
// the wait whatever the client's socket timeouts. That hand-off between
// goroutines costs about as much as the round trip itself on a busy
// machine (BenchmarkRedis in the bench module, "headgate-plain-client"):
// build the client with ContextTimeoutEnabled.
type Store struct {
	client redis.UniversalClient
	key    string
	state  []string // {key}:state
	leases []string // {key}:leases
	cfg    config

	// clock, when set (tests only), replaces Redis TIME: ns on the store's
	// clock.
	clock func() int64

	// ctxTimeouts: the client honours a context's deadline on the socket
	// (ContextTimeoutEnabled), so a call can run on the caller's goroutine.
	ctxTimeouts bool

	// lean holds the command of the last plain Take (see plainCmd).
	lean atomic.Pointer[leanArgs]

	// deadlines bounds every call by cfg.timeout with one timer.
	deadlines deadlines

	mu      sync.Mutex
	down    bool      // the last call to Redis failed; guarded by mu
	probeAt time.Time // when to try Redis again; guarded by mu
	lastErr error     // the last failure; guarded by mu

	// cause is why a fresh connection to Redis failed when a call last
	// timed out (diagnose), or nil; guarded by mu.
	cause      error
	diagnosing bool // a diagnose goroutine runs; guarded by mu

	fb *fallback // fail open: the local budget; nil when failing closed
}

// New returns a Store keeping a budget's state in Redis under key, through
// client (a *redis.Client, *redis.ClusterClient, *redis.Ring or a
// Sentinel-backed client: AUTH, TLS and ACL users are the client's
// business). Every process that shares a quota uses the same key.
//
// The store's keys are {key}:state and {key}:leases: the braces are a
// Redis Cluster hash tag, so both sit in one hash slot. They expire when
// unused (WithTTL, WithLeaseTTL). New makes no call to Redis; scripts are
// loaded on first use (EVALSHA, falling back to EVAL after a NOSCRIPT).
//
// By default a call to Redis may take DefaultTimeout, and a Store whose
// Redis is unreachable or slow fails closed (WithFailClosed); see
// WithFailOpen. New returns an error matching core.ErrInvalidConfig for a
// nil client, an empty key or an invalid option.
func New(client redis.UniversalClient, key string, opts ...Option) (*Store, error) {
	c := newConfig(opts)
	switch {
	case client == nil || isNilPointer(client): // a typed nil (var c *redis.Client) too
		return nil, &core.ConfigError{Field: "redisstore.New", Msg: "client must not be nil"}
	case key == "":
		return nil, &core.ConfigError{Field: "redisstore.New", Msg: "key must not be empty"}
	case len(c.errs) > 0:
		return nil, c.errs[0]
	}
	s := &Store{
		client: client,
		key:    key,
		state:  []string{"{" + key + "}:state"},
		leases: []string{"{" + key + "}:leases"},
		cfg:    c,
	}
	s.deadlines.d = c.timeout
	switch cl := client.(type) {
	case interface{ Options() *redis.Options }:
		s.ctxTimeouts = cl.Options().ContextTimeoutEnabled
	case interface{ Options() *redis.ClusterOptions }:
		s.ctxTimeouts = cl.Options().ContextTimeoutEnabled
	case interface{ Options() *redis.RingOptions }:
		s.ctxTimeouts = cl.Options().ContextTimeoutEnabled
	}
	if c.failOpen {
		s.fb = newFallback(c.share, c.maxInFlight)
	}
	return s, nil
}

// isNilPointer reports whether v holds a nil pointer, which would panic on
// first use.
func isNilPointer(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// Key returns the key the store was built with.
func (s *Store) Key() string { return s.key }

var _ core.Store = (*Store)(nil)

// rebaseAfter is when, in seconds since ep, the scripts move ep forward
// (see scripts.go). A variable for tests.
var rebaseAfter int64 = 1 << 22

// stateArgs returns the arguments every state script begins with, then
// extra.
func (s *Store) stateArgs(extra ...any) []any { return append(s.headArgs(len(extra)), extra...) }

// headArgs returns the arguments every state script begins with, in a
// slice with room for n more.
func (s *Store) headArgs(n int) []any {
	args := make([]any, 0, 4+n)
	if s.clock != nil {
		sec, ns := split(s.clock())
		args = append(args, sec, ns)
	} else {
		args = append(args, "", "")
	}
	return append(args, s.cfg.ttl.Milliseconds(), rebaseAfter)
}

// leanArgs is the EVALSHA command of a plain Take at one pace — evalsha,
// take's SHA1, 1, the state key, then take's arguments — boxed once. It
// is never modified, nor is it by go-redis, which writes it as it is.
type leanArgs struct {
	interval time.Duration
	burst    int
	rebase   int64
	cmd      []any
}

// plainCmd returns the EVALSHA command for a plain Take — no extra
// dimension, no deadline, on Redis's clock: nearly every Take — from the
// store's cache when the pace is the last plain Take's, so that such a
// Take allocates neither its arguments nor its command; nil for any other
// Take.
func (s *Store) plainCmd(p core.Pace, maxWait time.Duration) []any {
	if len(p.Dims) > 0 || maxWait >= 0 || s.clock != nil {
		return nil
	}
	if l := s.lean.Load(); l != nil && l.interval == p.Interval && l.burst == p.Burst && l.rebase == rebaseAfter {
		return l.cmd
	}
	cmd := append([]any{"evalsha", takeScript.Hash(), len(s.state), s.state[0]}, takeArgs(s.headArgs(4), p, -1)...)
	s.lean.Store(&leanArgs{p.Interval, p.Burst, rebaseAfter, cmd})
	return cmd
}

// Take implements core.Store: it reserves the next turn in Redis, or in
// the fallback when failing open.
func (s *Store) Take(ctx context.Context, p core.Pace, maxWait time.Duration) (core.Turn, error) {
	if maxWait < 0 {
		maxWait = -1
	}
	q := call{sc: takeScript, keys: s.state, cmd: s.plainCmd(p, maxWait)}
	if q.cmd == nil {
		q.args = takeArgs(s.headArgs(4+4*len(p.Dims)), p, maxWait)
	}
	v, err := s.do(ctx, "take", q)
	if err == nil {
		t, pause, err := parseTurn(v, p)
		if err == nil && s.fb != nil {
			s.fb.adopt(core.StoreStatus{Pause: pause, PauseStatus: t.Status, Factor: t.Factor})
		}
		return t, err
	}
	if s.fb == nil || !isStoreError(err) {
		return core.Turn{}, err
	}
	t, ferr := s.fb.take(ctx, p, maxWait)
	t.Fallback = err // the budget reports the outage (core.StoreFailure)
	return t, ferr
}

// Refund implements core.Store: it gives the turn back if nobody took a
// turn after it (in each extra dimension, if nobody reserved after it
// there).
func (s *Store) Refund(ctx context.Context, t core.Turn) error {
	if s.fb != nil && s.fb.refund(ctx, t) {
		return nil
	}
	tok, ok := parseToken(t.Token)
	if !ok {
		return nil // not a turn this store granted
	}
	_, err := s.run(ctx, "refund", refundScript, s.state, s.stateArgs(tok.refundArgs()...)...)
	return err
}

// Settle implements core.Store: it settles a granted turn's costs in the
// extra dimensions at actual (see core.Store).
func (s *Store) Settle(ctx context.Context, t core.Turn, actual []int64) error {
	if s.fb != nil && s.fb.settle(ctx, t, actual) {
		return nil
	}
	tok, ok := parseToken(t.Token)
	if !ok || len(tok.dims) == 0 {
		return nil // not a turn this store granted, or nothing to settle
	}
	_, err := s.run(ctx, "settle", settleScript, s.state, s.stateArgs(tok.settleArgs(actual)...)...)
	return err
}

// Report implements core.Store: it applies a response's pause and adaptive
// feedback in Redis (and, failing open, to the fallback too).
func (s *Store) Report(ctx context.Context, r core.Report) (core.StoreStatus, error) {
	var local core.StoreStatus
	if s.fb != nil {
		local = s.fb.report(ctx, r)
	}
	a := r.Pace.Adaptive
	on := 0
	if a.Enabled() {
		on = 1
	}
	allow := r.Allow
	if allow <= 0 {
		allow = r.Pace.Burst
	}
	ss, sn := split(r.Sent)
	args := []any{int64(r.Pace.Interval), r.Pace.Burst, on, a.Decrease, a.MinRate, a.Increase,
		bit(r.Refused), r.Factor, r.Plateau, r.Status, int64(r.Pause), allow, ss, sn,
		r.Remaining, r.Limit, int64(r.Reset), len(r.Quotas)}
	for _, q := range r.Quotas {
		args = append(args, q.Name, q.Remaining, q.Limit, int64(q.Reset))
	}
	args = append(args, len(r.Pace.Dims))
	for _, d := range r.Pace.Dims {
		args = append(args, d.Name, int64(d.Interval), d.Burst)
	}
	v, err := s.run(ctx, "report", reportScript, s.state, s.stateArgs(args...)...)
	if err == nil {
		return s.adopt(parseStatus(v))
	}
	if s.fb == nil || !isStoreError(err) {
		return core.StoreStatus{}, err
	}
	local.Fallback = err
	return local, nil
}

// Status implements core.Store: the time left in the shared pause, its
// status and the adaptive factor.
func (s *Store) Status(ctx context.Context) (core.StoreStatus, error) {
	v, err := s.run(ctx, "status", statusScript, s.state, s.stateArgs()...)
	if err == nil {
		return s.adopt(parseStatus(v))
	}
	if s.fb == nil || !isStoreError(err) {
		return core.StoreStatus{}, err
	}
	st, ferr := s.fb.status(ctx)
	st.Fallback = err
	return st, ferr
}

// adopt hands a status Redis returned to the fallback, when failing open,
// so that it starts from the pause and the factor the fleet last had.
func (s *Store) adopt(st core.StoreStatus, err error) (core.StoreStatus, error) {
	if err == nil && s.fb != nil {
		s.fb.adopt(st)
	}
	return st, err
}

// run runs one script under the store's timeout and failure policy. It
// returns ctx's error as is when ctx ends first, and an *Error when Redis
// fails, times out or was down within the probe interval.
func (s *Store) run(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) ([]any, error) {
	v, err := s.do(ctx, op, call{sc: sc, keys: keys, args: args})
	if x, ok := v.([]any); ok || err != nil {
		return x, err
	}
	return []any{v}, nil
}

// do is run for a call, with the script's reply as go-redis reads it.
func (s *Store) do(ctx context.Context, op string, q call) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.skip(op); err != nil {
		return nil, err
	}
	cctx := s.deadlines.start(ctx) // context.WithTimeout(ctx, s.cfg.timeout), without a timer of its own
	defer s.deadlines.end(cctx)
	var r result
	if s.ctxTimeouts {
		r = q.run(cctx, s.client)
	} else {
		// go-redis honours a context's deadline on the socket only with
		// ContextTimeoutEnabled: wait in our own select so the timeout
		// holds whatever the client.
		done := make(chan result, 1)
		go func() { done <- q.run(cctx, s.client) }()
		select {
		case r = <-done:
		case <-cctx.Done():
			select {
			case r = <-done: // the client's reply came with the timeout: keep it
			default:
				r.err = cctx.Err()
			}
		}
	}
	if r.err != nil {
		if err := ctx.Err(); err != nil {
			return nil, err // the caller's context ended: not a store failure
		}
		// Only a call the timeout cut short reads as a timeout: a client
		// that gave up for a reason of its own (a refused connection, after
		// its retries outlasted the timeout) keeps its error as the cause.
		if cctx.Err() != nil && (errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, context.Canceled)) {
			r.err = s.timedOut()
		}
		if q.keys[0] == s.state[0] && strings.HasPrefix(r.err.Error(), "WRONGTYPE") {
			// Only a hash is ever there but ours: the state before it
			// was a string (see scripts.go).
			r.err = fmt.Errorf("%s holds the state of an older redisstore (a hash): every process sharing it must run one format: %w", q.keys[0], r.err)
		}
		err := &Error{Op: op, Err: r.err}
		s.failed(err)
		return nil, err
	}
	s.succeeded()
	return r.v, nil
}

type result struct {
	v   any
	err error
}

// A call is one run of a script: sc with keys and args, or, when cmd is
// set, its EVALSHA command whole (see leanArgs), which go-redis sends as
// it is.
type call struct {
	sc   *redis.Script
	keys []string
	args []any
	cmd  []any
}

// run makes the call through c: EVALSHA, then EVAL when Redis does not
// have the script (NOSCRIPT).
func (q call) run(ctx context.Context, c redis.UniversalClient) result {
	var v any
	var err error
	if q.cmd != nil {
		v, err = c.Do(ctx, q.cmd...).Result()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			v, err = q.sc.Eval(ctx, c, q.keys, q.cmd[3+len(q.keys):]...).Result()
		}
	} else {
		v, err = q.sc.Run(ctx, c, q.keys, q.args...).Result()
	}
	if v == nil && err == nil {
		err = fmt.Errorf("headgate: redis store: empty reply")
	}
	return result{v, err}
}

// skip returns the error of a call made while Redis is considered down,
// or nil when the call should go to Redis (up, or this call is the probe).
func (s *Store) skip(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return nil
	}
	if now := time.Now(); !now.Before(s.probeAt) {
		s.probeAt = now.Add(s.cfg.probeInterval) // this call probes; the others wait
		return nil
	}
	return &Error{Op: op, Err: s.lastErr, Skipped: true}
}

func (s *Store) failed(err *Error) {
	s.mu.Lock()
	s.down, s.lastErr = true, err.Err
	s.probeAt = time.Now().Add(s.cfg.probeInterval)
	s.mu.Unlock()
	if f := s.cfg.onFailure; f != nil {
		f(err)
	}
}

// timedOut returns the error of a call that had no reply within the
// timeout, with the cause the last diagnosis found, and starts a new
// diagnosis.
//
// The client's own error is lost when its retries outlast the timeout
// (go-redis returns the context's error), so a killed Redis would read as
// a slow one. Diagnosis dials Redis once with the client's own dialer, in
// a goroutine (at most one at a time, at most once per call that times
// out), and keeps the dial's error as the cause of the timeouts and
// outage errors that follow; a dial that succeeds clears it.
func (s *Store) timedOut() error {
	s.mu.Lock()
	cause := s.cause
	start := !s.diagnosing
	s.diagnosing = true
	s.mu.Unlock()
	if start {
		go s.diagnose()
	}
	return errTimeout{s.cfg.timeout, cause}
}

// diagnose dials Redis with the client's dialer (clients with a single
// address: *redis.Client and failover clients) and records the outcome.
func (s *Store) diagnose() {
	var cause error
	if cl, ok := s.client.(interface{ Options() *redis.Options }); ok {
		if o := cl.Options(); o.Dialer != nil {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.timeout)
			conn, err := o.Dialer(ctx, o.Network, o.Addr)
			cancel()
			if err == nil {
				conn.Close()
			}
			cause = err
		}
	}
	s.mu.Lock()
	s.cause, s.diagnosing = cause, false
	if t, ok := s.lastErr.(errTimeout); ok && s.down && cause != nil {
		t.cause = cause
		s.lastErr = t // the outage's skipped calls name it too
	}
	s.mu.Unlock()
}

func (s *Store) succeeded() {
	s.mu.Lock()
	was := s.down
	s.down, s.lastErr, s.cause = false, nil, nil
	s.mu.Unlock()
	if was && s.cfg.onRecover != nil {
		s.cfg.onRecover()
	}
}

// Healthy reports whether the last call to Redis succeeded (true before
// the first call).
func (s *Store) Healthy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.down
}

// split turns a time on the store's clock into whole seconds and
// nanoseconds in [0, 1e9), which the scripts read exactly.
func split(t int64) (sec, nsec int64) {
	sec, nsec = t/1e9, t%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	return sec, nsec
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseTurn reads take's reply to a Take at p: the turn, and the time left
// in the pause.
func parseTurn(v any, p core.Pace) (core.Turn, time.Duration, error) {
	b, ok := v.(string)
	if !ok {
		return core.Turn{}, 0, fmt.Errorf("headgate: redis store: take replied %T, want a string", v)
	}
	if len(b) < 80 || len(b)%8 != 0 {
		return core.Turn{}, 0, fmt.Errorf("headgate: redis store: take replied %d bytes, want 10 doubles or more", len(b))
	}
	var n [10]int64
	for i := range n {
		if i == 5 {
			continue // the factor
		}
		x, ok := replyInt(b, i)
		if !ok {
			return core.Turn{}, 0, fmt.Errorf("headgate: redis store: take's reply value %d is not an integer", i)
		}
		n[i] = x
	}
	f := replyFloat(b, 5)
	if !(f > 0 && f <= 1) {
		return core.Turn{}, 0, fmt.Errorf("headgate: redis store: bad adaptive factor %v", f)
	}
	ep := n[8] * 1e9
	tokText := "" // nothing to refund when nothing was reserved
	if n[0] == 1 {
		tok := token{before: ep + n[6], after: ep + n[7]}
		if len(p.Dims) > 0 {
			tok.at = ep + n[2]
			if err := tok.readDims(b[80:], ep, p); err != nil {
				return core.Turn{}, 0, err
			}
		}
		tokText = tok.String()
	}
	return core.Turn{
		Granted: n[0] == 1, Wait: time.Duration(n[1]), At: ep + n[2],
		Paused: n[3] == 1, Status: int(n[4]), Factor: f,
		Token: tokText,
	}, time.Duration(n[9]), nil
}

// replyFloat returns double i of a reply of little-endian doubles.
func replyFloat(b string, i int) float64 {
	var u uint64
	for j := 7; j >= 0; j-- {
		u = u<<8 | uint64(b[8*i+j])
	}
	return math.Float64frombits(u)
}

// replyInt returns double i of a reply of little-endian doubles as the
// integer it holds, or false when it holds none (every integer the
// scripts reply is below 2^53 in magnitude, but an idle tat, -2^62).
func replyInt(b string, i int) (int64, bool) {
	x := replyFloat(b, i)
	if x != math.Trunc(x) || x < -(1<<62) || x > 1<<62 {
		return 0, false
	}
	return int64(x), true
}

func parseStatus(v []any) (core.StoreStatus, error) {
	n, err := ints(v, 0, 1)
	if err != nil {
		return core.StoreStatus{}, err
	}
	f, err := factor(v, 2)
	if err != nil {
		return core.StoreStatus{}, err
	}
	return core.StoreStatus{Pause: time.Duration(n[0]), PauseStatus: int(n[1]), Factor: f}, nil
}

// ints reads the integers at the given indexes of a script's reply (at
// most 10 values).
func ints(v []any, idx ...int) ([10]int64, error) {
	var out [10]int64
	for _, i := range idx {
		if i >= len(v) {
			return out, fmt.Errorf("headgate: redis store: short reply (%d values)", len(v))
		}
		n, ok := v[i].(int64)
		if !ok {
			return out, fmt.Errorf("headgate: redis store: reply value %d is %T, want an integer", i, v[i])
		}
		out[i] = n
	}
	return out, nil
}

func factor(v []any, i int) (float64, error) {
	if i >= len(v) {
		return 0, fmt.Errorf("headgate: redis store: short reply (%d values)", len(v))
	}
	str, _ := v[i].(string)
	f, err := strconv.ParseFloat(str, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("headgate: redis store: bad adaptive factor %q", str)
	}
	return f, nil
}
