package matrix

import (
	"math"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// Workload is one cell's batch and the server's limit.
type Workload struct {
	N, Workers int           // N calls from Workers goroutines
	Rate       int           // the server admits Rate requests per second
	Burst      int           // a GCRA server's burst; window servers admit Rate per window
	Pause      time.Duration // the pause scenario's server pause
	MaxTries   int           // tries per call, the first included, for every client
}

// Issue14 is the issue's workload: 500 calls from 100 goroutines against a
// server of 100/s (burst 10 where it has one), a 2 s pause.
var Issue14 = Workload{N: 500, Workers: 100, Rate: 100, Burst: 10, Pause: 2 * time.Second, MaxTries: 6}

// pauseAfter is how many admissions the server lets through before it
// pauses: a third of the batch.
func (w Workload) pauseAfter() int { return max(1, w.N/3) }

// Scenario is what a client is configured with, and what the server does.
type Scenario struct {
	Name   string
	Factor float64 // the client is configured at Factor × the server's rate and burst
	Pause  bool    // the server pauses once a third of the batch was admitted (every worker then waits in a call: 99 behind the refused one)
	Learn  bool    // the client is configured with no rate: it learns it from the server
}

// Scenarios are the issue's, in table order.
var Scenarios = []Scenario{
	{Name: "exact", Factor: 1},
	{Name: "2x", Factor: 2},
	{Name: "half", Factor: 0.5},
	{Name: "pause", Factor: 1, Pause: true},
	{Name: "learned", Factor: 1, Learn: true},
}

// ScenarioByName returns the scenario called name.
func ScenarioByName(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// configured is the rate and burst a client is configured with: Factor ×
// the server's, at least 1.
func (s Scenario) configured(rate, burst int) (int, int) {
	f := func(v int) int { return max(1, int(math.Round(float64(v)*s.Factor))) }
	return f(rate), f(burst)
}

// Arrival is one request as the server saw it.
type Arrival struct {
	At     time.Time
	Call   int  // the call it belongs to (its retries share it); -1 if unknown
	Status int  // the status sent
	Paused bool // refused because the server was paused
}

// Result is one cell's measurement.
type Result struct {
	Server, Scenario, Client string
	Skipped                  string // why the cell did not run; "" when it ran

	Calls    int           // calls made: the batch
	Failed   int           // calls that did not end in a 2xx, after every retry
	Sent     int           // requests the server saw, retries included
	Refused  int           // 429s (and 503s) the server sent
	Makespan time.Duration // from the first call to the last call's return
	Ideal    time.Duration // what the server's limit allows (half: the configured limit's)

	// KeptConfigured is whether every window of the sends kept to the rate
	// and burst the client was configured with, give or take Env.Slack (the
	// bound of the half scenario); ConfiguredSlack is the least slack at
	// which they did, 0 when they kept to it exactly: on a loaded machine
	// requests sent on time arrive bunched by a few milliseconds.
	KeptConfigured  bool
	ConfiguredSlack time.Duration
	ConfiguredError string // at Env.Slack

	// Pause scenario.
	Paused     bool          // the pause happened
	Found      bool          // a request was refused by it
	IntoKnown  int           // requests sent, and refused by the pause, after the client received its first refusal
	RetrySeen  bool          // the call that found the pause was retried
	RetryDelay time.Duration // its retry's arrival − the pause's end (negative: into the pause)

	Leaked int // budget slots still held after the batch; must be 0

	// Sliding-window servers (floor.go): how far into the server's window
	// the batch started, and a greedy client's makespan from there (within
	// 1 % of what any client can reach); 0 for other servers, and when
	// configured at half (the configured limit's ideal is the bound then).
	Phase time.Duration
	Floor time.Duration
}

// RefusedPct is the 429s as a percentage of the calls.
func (r Result) RefusedPct() float64 {
	if r.Calls == 0 {
		return 0
	}
	return 100 * float64(r.Refused) / float64(r.Calls)
}

// Ratio is makespan ÷ ideal.
func (r Result) Ratio() float64 {
	if r.Ideal <= 0 {
		return 0
	}
	return float64(r.Makespan) / float64(r.Ideal)
}

// FloorRatio is the floor ÷ ideal, 0 when the cell has no floor.
func (r Result) FloorRatio() float64 {
	if r.Ideal <= 0 || r.Floor <= 0 {
		return 0
	}
	return float64(r.Floor) / float64(r.Ideal)
}

// ideal is the shortest makespan a limit of rate per second with burst
// allows for n calls: the burst at once, then one per interval.
func ideal(n, rate, burst int) time.Duration {
	return time.Duration(max(0, n-burst)) * time.Second / time.Duration(rate)
}

// measure fills r's server-side figures from the arrivals. pauseAt is when
// the pause began (zero if it did not).
//
// seen is the client side (nil: not recorded). A request sent before the
// client received the first refusal that came in the pause — the rest of a
// burst sent at one instant, arriving a little later — was sent before the
// client could know of the pause, and is not counted as sent into it. Nor,
// for a headgate client, is one sent before its budget applied a refusal
// received since (its first Pushback since): granted its turn before the
// pause began, it went to the wire while the refusal's goroutine waited
// for a CPU, the budget none the wiser. (Over loopback on two loaded CPUs
// a window's burst of 99 takes a few ms to reach the wire, and up to 7
// of one were counted so, every one sent before its budget had the pause.)
func (r *Result) measure(arrivals []Arrival, pauseAt time.Time, seen *clientSide, pause time.Duration, configuredRate, configuredBurst int, slack time.Duration) {
	r.Sent = len(arrivals)
	times := make([]time.Time, 0, len(arrivals))
	first := -1
	for i, a := range arrivals {
		times = append(times, a.At)
		if a.Status == 429 || a.Status == 503 {
			r.Refused++
		}
		if a.Paused && first < 0 {
			first = i
		}
	}
	if first >= 0 {
		known := arrivals[first].At
		if seen != nil {
			if at := seen.firstRefusalSince(pauseAt); at.After(known) {
				known = at
			}
			if at := seen.firstPushbackSince(known); at.After(known) {
				known = at // the budget knew once it had applied a refusal since
			}
		}
		for _, a := range arrivals[first+1:] {
			sent := a.At // not recorded: as if sent when it arrived (against the client)
			if seen != nil {
				if at := seen.sentFor(a.Call, a.At); !at.IsZero() {
					sent = at
				}
			}
			if a.Paused && sent.After(known) {
				r.IntoKnown++
			}
		}
	}
	interval := time.Second / time.Duration(configuredRate)
	err := quotatest.CheckTimes(times, configuredBurst, interval, slack)
	r.KeptConfigured = err == nil
	if err != nil {
		r.ConfiguredError = err.Error()
	}
	r.ConfiguredSlack = leastSlack(times, configuredBurst, interval)
	if pauseAt.IsZero() {
		return
	}
	r.Paused = true
	if first < 0 {
		return
	}
	r.Found = true
	end := pauseAt.Add(pause)
	call := arrivals[first].Call
	for _, a := range arrivals[first+1:] {
		if call >= 0 && a.Call == call {
			r.RetrySeen, r.RetryDelay = true, a.At.Sub(end)
			return
		}
	}
}

// maxSlack bounds leastSlack's search: sends that need more broke the
// configured rate, whatever the noise.
const maxSlack = 10 * time.Second

// leastSlack is the least slack, to the nanosecond, at which times keep to
// burst and interval (CheckTimes), or maxSlack if none up to it does.
func leastSlack(times []time.Time, burst int, interval time.Duration) time.Duration {
	if quotatest.CheckTimes(times, burst, interval, 0) == nil {
		return 0
	}
	lo, hi := time.Duration(0), maxSlack // fails at lo; passes at hi, if at all
	if quotatest.CheckTimes(times, burst, interval, hi) != nil {
		return maxSlack
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if quotatest.CheckTimes(times, burst, interval, mid) == nil {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
