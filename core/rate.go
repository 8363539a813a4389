package core

import (
	"strconv"
	"time"
)

// A Rate is a number of requests per period: the pace a provider allows.
//
// Up to Requests requests (at least one) may go back to back from an idle
// budget; after that they are Period/Requests apart. A large quota stated per
// hour therefore allows a burst of the whole quota at once: PerHour(5000) lets
// 5000 requests go in the first instant. To keep a steadier pace, state the
// same quota per minute or per second (PerMinute(83), Rate{Requests: 25,
// Period: 18 * time.Second}) or cap the burst with WithBurst.
//
// The zero Rate is invalid: NewBudget rejects it.
type Rate struct {
	Requests int           // requests allowed per Period; must be positive
	Period   time.Duration // the period; must be positive
}

// PerSecond returns a rate of n requests per second.
func PerSecond(n int) Rate { return Rate{Requests: n, Period: time.Second} }

// PerMinute returns a rate of n requests per minute.
func PerMinute(n int) Rate { return Rate{Requests: n, Period: time.Minute} }

// PerHour returns a rate of n requests per hour.
func PerHour(n int) Rate { return Rate{Requests: n, Period: time.Hour} }

// Interval returns the time between two requests at this rate once the burst
// is spent: Period/Requests. It is 0 for an invalid rate.
func (r Rate) Interval() time.Duration {
	if r.Requests <= 0 || r.Period <= 0 {
		return 0
	}
	return r.Period / time.Duration(r.Requests)
}

// PerSecondFloat returns the sustained rate in requests per second.
func (r Rate) PerSecondFloat() float64 {
	if r.Requests <= 0 || r.Period <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Period.Seconds()
}

// String returns the rate in its readable form: "5/s", "300/min", "5000/h",
// or "10/100ms" for other periods.
func (r Rate) String() string {
	unit := ""
	switch r.Period {
	case time.Second:
		unit = "s"
	case time.Minute:
		unit = "min"
	case time.Hour:
		unit = "h"
	default:
		unit = r.Period.String()
	}
	return strconv.Itoa(r.Requests) + "/" + unit
}

// validate reports what is wrong with r, naming the field.
func (r Rate) validate(field string) error {
	switch {
	case r.Requests <= 0:
		return configErrorf(field+".Requests", "must be positive, got %d", r.Requests)
	case r.Period <= 0:
		return configErrorf(field+".Period", "must be positive, got %v", r.Period)
	case r.Interval() <= 0:
		return configErrorf(field, "is faster than one request per nanosecond (%d per %v)", r.Requests, r.Period)
	}
	return nil
}
