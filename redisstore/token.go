package redisstore

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/headgate-go/headgate/core"
)

// A token is what a Redis turn's refund token holds: the GCRA state
// before and after the reservation and, for a turn with extra dimensions,
// the FIFO mark (la) before it, its send time and, per dimension, its name,
// its tat before and after, the units reserved and the reservation's
// number (core's storeDim.reserve). Times are Unix
// nanoseconds of Redis time.
//
// Its text is "r" and the decimal fields joined by ":" — names in hex, so
// that they hold no ":" — as "r<before>:<after>" or
// "r<before>:<after>:<la>:<at>" and "<name>:<before>:<after>:<n>:<seq>" per
// dimension. The fallback's tokens start with "f".
type token struct {
	before, after int64
	la, at        int64
	dims          []dimToken
}

type dimToken struct {
	name          string
	before, after int64
	n, seq        int64 // the units reserved, the reservation's number
}

func (t token) String() string {
	b := make([]byte, 0, 40) // a turn without dimensions fits
	b = append(b, 'r')
	b = strconv.AppendInt(b, t.before, 10)
	b = strconv.AppendInt(append(b, ':'), t.after, 10)
	if t.dims != nil {
		b = strconv.AppendInt(append(b, ':'), t.la, 10)
		b = strconv.AppendInt(append(b, ':'), t.at, 10)
		for _, d := range t.dims {
			b = hex.AppendEncode(append(b, ':'), []byte(d.name))
			for _, n := range []int64{d.before, d.after, d.n, d.seq} {
				b = strconv.AppendInt(append(b, ':'), n, 10)
			}
		}
	}
	return string(b)
}

func parseToken(s string) (token, bool) {
	rest, ok := strings.CutPrefix(s, "r")
	if !ok {
		return token{}, false
	}
	f := strings.Split(rest, ":")
	if len(f) < 2 || (len(f) > 2 && (len(f) < 4 || (len(f)-4)%5 != 0)) {
		return token{}, false
	}
	num := func(i int) int64 {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			ok = false
		}
		return n
	}
	t := token{before: num(0), after: num(1)}
	if len(f) > 2 {
		t.la, t.at = num(2), num(3)
		t.dims = []dimToken{}
		for i := 4; i < len(f); i += 5 {
			name, err := hex.DecodeString(f[i])
			if err != nil {
				ok = false
			}
			t.dims = append(t.dims, dimToken{name: string(name), before: num(i + 1), after: num(i + 2), n: num(i + 3), seq: num(i + 4)})
		}
	}
	return t, ok
}

// readDims reads the extra dimensions of take's reply (b: its doubles
// from the 11th: la before, then each dimension's tat before and after,
// in ns since ep, and the reservation's number) for a Take at p.
func (t *token) readDims(b string, ep int64, p core.Pace) error {
	if len(b) != 8*(1+3*len(p.Dims)) {
		return fmt.Errorf("headgate: redis store: take replied %d dimension values for %d dimensions", len(b)/8, len(p.Dims))
	}
	n := make([]int64, len(b)/8)
	for i := range n {
		var ok bool
		if n[i], ok = replyInt(b, i); !ok {
			return fmt.Errorf("headgate: redis store: take's reply value %d is not an integer", 10+i)
		}
	}
	t.la = ep + n[0]
	t.dims = make([]dimToken, len(p.Dims))
	for i, d := range p.Dims {
		t.dims[i] = dimToken{name: d.Name, before: ep + n[1+3*i], after: ep + n[2+3*i], n: cost(p.Cost, i), seq: n[3+3*i]}
	}
	return nil
}

// cost is a Take's cost in dimension i: 0 past the end or below zero, as
// core.MemoryStore reads it.
func cost(c []int64, i int) int64 {
	if i < len(c) {
		return max(0, c[i])
	}
	return 0
}

// takeArgs appends take's arguments after the prologue's to args.
func takeArgs(args []any, p core.Pace, maxWait time.Duration) []any {
	args = append(args, int64(p.Interval), p.Burst, int64(maxWait), len(p.Dims))
	for i, d := range p.Dims {
		args = append(args, d.Name, int64(d.Interval), d.Burst, cost(p.Cost, i))
	}
	return args
}

// refundArgs are refund's arguments after the prologue's.
func (t token) refundArgs() []any {
	bs, bn := split(t.before)
	as, an := split(t.after)
	args := []any{bs, bn, as, an, len(t.dims)}
	if len(t.dims) > 0 {
		ls, ln := split(t.la)
		args = append(args, ls, ln)
	}
	for _, d := range t.dims {
		bs, bn := split(d.before)
		as, an := split(d.after)
		args = append(args, d.name, bs, bn, as, an, d.seq)
	}
	return args
}

// settleArgs are settle's arguments after the prologue's, at actual units
// per dimension (in the order of the Take).
func (t token) settleArgs(actual []int64) []any {
	ts, tn := split(t.at)
	args := []any{ts, tn, len(t.dims)}
	for i, d := range t.dims {
		args = append(args, d.name, d.seq, d.n, cost(actual, i))
	}
	return args
}
