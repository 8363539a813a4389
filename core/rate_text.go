package core

import (
	"encoding"

	"github.com/headgate-go/headgate/core/internal/ratetext"
)

// This file holds the text form of a Rate, for configuration files and
// flags: see UnmarshalText for the grammar.

var (
	_ encoding.TextMarshaler   = Rate{}
	_ encoding.TextAppender    = Rate{}
	_ encoding.TextUnmarshaler = (*Rate)(nil)
)

// ParseRate reads a rate in its text form, <count>/<period>: "600/min",
// "5/s", "5000/h", "10/100ms" (Rate.UnmarshalText gives the grammar).
//
// The rate must be valid for NewBudget: a zero, negative or non-integer
// count, a zero or negative period, a rate faster than one request per
// nanosecond, a count or period too large, a missing or unknown unit are
// errors that quote the input and match ErrInvalidConfig. So is the empty
// string: a zero rate is never read from text as "no limit". Where a
// configuration may leave the rate out to mean "no limit", leave it empty
// (UnmarshalText reads "" as the zero Rate) and build the budget with
// NewBudgetOrDisabled.
func ParseRate(s string) (Rate, error) {
	n, d, why := ratetext.Parse(s)
	if why != "" {
		return Rate{}, rateError(s, why)
	}
	r := Rate{Requests: n, Period: d}
	if r.Interval() <= 0 {
		return Rate{}, rateError(s, "it is faster than one request per nanosecond")
	}
	return r, nil
}

// rateError reports invalid rate text, quoting it (cut short if long).
func rateError(in, why string) error {
	const max = 64
	if len(in) > max {
		in = in[:max] + "…"
	}
	return configErrorf("rate", "%q is invalid: %s", in, why)
}

// AppendText appends the rate's text form (String) to b. It implements
// encoding.TextAppender. The zero Rate appends nothing; any other invalid
// rate is an error naming the field at fault.
func (r Rate) AppendText(b []byte) ([]byte, error) {
	if r == (Rate{}) {
		return b, nil
	}
	if err := r.validate("rate"); err != nil {
		return b, err
	}
	return append(b, r.String()...), nil
}

// MarshalText returns the rate's text form, String: "5/s", "300/min",
// "5000/h", "10/100ms". It implements encoding.TextMarshaler. The zero Rate
// (a rate left unset) marshals as the empty text, which UnmarshalText reads
// back as the zero Rate; any other invalid rate is an error.
func (r Rate) MarshalText() ([]byte, error) { return r.AppendText(nil) }

// UnmarshalText reads a rate in its text form. It implements
// encoding.TextUnmarshaler, so a Rate can sit in a configuration struct
// read from JSON, YAML, TOML or the environment.
//
// A rate is written <count>/<period>:
//
//	600/min   5/s   5000/h   10/100ms   1/2h   5/sec   300/minute   1/hour   5 / s
//
// The count is a positive whole number in decimal. The period is one of the
// words s, sec, second, m, min, minute, h, hr, hour, or a Go duration as
// time.ParseDuration reads it ("100ms", "2s", "1m30s"), whose leading 1 may
// be left out ("ms" is "1ms"). Spaces and tabs around the whole and around
// the slash are ignored; units are case sensitive, as in Go durations.
// MarshalText writes String's form, so every valid Rate reads back to the
// same Requests and Period ("10/1s" reads as PerSecond(10) and writes
// "10/s").
//
// Like netip.Addr, it reads the empty text as the zero Rate: a rate left
// unset. NewBudget rejects the zero Rate; NewBudgetOrDisabled builds a
// disabled budget from it. A count of zero ("0/s") is an error, never "no
// limit". On error r is left unchanged.
func (r *Rate) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*r = Rate{}
		return nil
	}
	v, err := ParseRate(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Set reads a rate from a command-line flag, as UnmarshalText does, so a
// *Rate is a flag.Value: flag.Var(&rate, "rate", "requests per period,
// e.g. 5/s"). An empty value sets the zero Rate (unset).
func (r *Rate) Set(s string) error { return r.UnmarshalText([]byte(s)) }
