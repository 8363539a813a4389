package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
)

// TestStateOfAnotherFormatFailsEveryCall: a state key written by another
// format — the hash of redisstore before the string state, or a string of
// another version — fails every call that reads it (an *Error naming the
// key and the cause) and is left as it was: a fleet that mixes formats
// stops instead of spending two quotas.
func TestStateOfAnotherFormatFailsEveryCall(t *testing.T) {
	ctx := context.Background()
	p := core.Pace{Interval: time.Millisecond, Burst: 1}
	for _, tc := range []struct {
		name  string
		write func(s *Store) error
	}{
		{"older hash", func(s *Store) error {
			return s.client.HSet(ctx, s.state[0], "ep", time.Now().Unix(), "tat", 0, "iv", int64(p.Interval), "bu", 1).Err()
		}},
		{"other version", func(s *Store) error {
			// version 2: the string state before the shared factor's
			// plateau and growth clock (fp, gw, gt) replaced lc
			return s.client.Set(ctx, s.state[0], "\x02"+strings.Repeat("\x00", 80), 0).Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if err := tc.write(s); err != nil {
				t.Fatal(err)
			}
			dump := func() string { return s.client.Dump(ctx, s.state[0]).Val() }
			before := dump()
			calls := map[string]func() error{
				"take": func() error { _, err := s.Take(ctx, p, -1); return err },
				"report": func() error {
					_, err := s.Report(ctx, core.Report{Status: 429, Pause: time.Second, Pace: p})
					return err
				},
				"status": func() error { _, err := s.Status(ctx); return err },
			}
			for op, call := range calls {
				s.succeeded() // no skipping within the probe interval: each call asks Redis
				err := call()
				var e *Error
				if !errors.As(err, &e) || e.Skipped || !errors.Is(err, ErrUnavailable) ||
					!strings.Contains(err.Error(), s.state[0]) || !strings.Contains(err.Error(), "one format") {
					t.Errorf("%s on a state of another format = %v, want an *Error naming the key and the mixed formats", op, err)
				}
			}
			if dump() != before {
				t.Error("a call changed the state of another format")
			}
		})
	}
}

// TestLeanTakeKeepsTheDimensionsTurns: a plain take (the lean path, which
// reads only the state's head) on a state whose extra dimension has a turn
// reserved an hour ahead keeps the key for that hour and the TTL, not the
// TTL alone.
func TestLeanTakeKeepsTheDimensionsTurns(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, WithTTL(time.Minute))
	p := core.Pace{Interval: time.Millisecond, Burst: 1,
		Dims: []core.DimPace{{Name: "tokens", Interval: time.Second, Burst: 1}}, Cost: []int64{3600}}
	if turn, err := s.Take(ctx, p, -1); err != nil || !turn.Granted {
		t.Fatalf("Take with a dimension = %+v, %v", turn, err)
	}
	plain := core.Pace{Interval: p.Interval, Burst: p.Burst}
	for range 3 { // the first may refresh the expiry, the next skip it
		if turn, err := s.Take(ctx, plain, -1); err != nil || !turn.Granted {
			t.Fatalf("plain Take = %+v, %v", turn, err)
		}
	}
	if ttl := s.client.PTTL(ctx, s.state[0]).Val(); ttl < time.Hour {
		t.Fatalf("after plain takes the state expires in %v, want past the dimension's turn an hour ahead (+ the TTL)", ttl)
	}
}

// TestParseTurnRejectsBadReplies: a take reply that is not take's — not
// a string, short, a partial double, a value that is no integer, a factor
// out of (0, 1], dimension values that do not match the Take — is an
// error, never a panic nor a turn.
func TestParseTurnRejectsBadReplies(t *testing.T) {
	pack := func(v ...float64) string {
		b := make([]byte, 0, 8*len(v))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return string(b)
	}
	good := []float64{1, 0, 5, 0, 0, 1, -1 << 62, 6, 1_700_000_000, 0}
	with := func(i int, x float64) string {
		v := append([]float64(nil), good...)
		v[i] = x
		return pack(v...)
	}
	plain := core.Pace{Interval: time.Millisecond, Burst: 1}
	dims := core.Pace{Interval: time.Millisecond, Burst: 1, Dims: []core.DimPace{{Name: "tokens", Interval: time.Millisecond, Burst: 10}}}
	if turn, _, err := parseTurn(pack(good...), plain); err != nil || !turn.Granted || turn.At != 1_700_000_000*1e9+5 {
		t.Fatalf("parseTurn(a good reply) = %+v, %v", turn, err)
	}
	for name, tc := range map[string]struct {
		v any
		p core.Pace
	}{
		"nil":                  {nil, plain},
		"an array":             {[]any{int64(1)}, plain},
		"empty":                {"", plain},
		"short":                {pack(good[:9]...), plain},
		"a partial double":     {pack(good...) + "x", plain},
		"a fraction":           {with(2, 5.5), plain},
		"NaN":                  {with(1, math.NaN()), plain},
		"huge":                 {with(7, 1e300), plain},
		"factor 0":             {with(5, 0), plain},
		"factor 2":             {with(5, 2), plain},
		"no dimension values":  {pack(good...), dims},
		"dimension values off": {pack(append(good, 1, 2)...), dims},
	} {
		if turn, _, err := parseTurn(tc.v, tc.p); err == nil {
			t.Errorf("parseTurn(%s) = %+v, want an error", name, turn)
		}
	}
}
