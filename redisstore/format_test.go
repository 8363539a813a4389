package redisstore

import (
	"context"
	"errors"
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
			return s.client.Set(ctx, s.state[0], "\x03"+strings.Repeat("\x00", 80), 0).Err()
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
