package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// Outcome is what one client kind reached on a draw, summed over the
// draw's clients: the key's figures, as the server saw them.
type Outcome struct {
	Sent     int           `json:"sent"`     // requests the server saw, retries included
	Refused  int           `json:"refused"`  // 429s the server sent
	Failed   int           `json:"failed"`   // calls that did not end in a 2xx, deadline failures apart
	Deadline int           `json:"deadline"` // calls failed for their caller's deadline (one the server's real rate meets)
	Makespan time.Duration `json:"makespan"` // from the start to the last call's return

	// ConfiguredBroken is how many of the draw's clients sent faster than
	// they were configured to (their sends, at the wire, against the
	// configured rate and burst: quotatest.CheckTimes with
	// configuredSlack); ConfiguredError is the first client's window that
	// broke it. With no rate configured, nothing is checked.
	ConfiguredBroken int    `json:"configured_broken"`
	ConfiguredError  string `json:"configured_error,omitempty"`
}

// configuredSlack is the slack the configured bound is checked with:
// x/time/rate's float arithmetic puts some turns a nanosecond early, where
// sending too fast puts one a whole interval (5 ms at least in the family)
// early.
const configuredSlack = time.Microsecond

// DrawResult is a draw and what both clients reached on it.
type DrawResult struct {
	Draw Draw `json:"draw"`
	// Ideal is the best makespan any client can reach: a greedy client's,
	// which sends each call the instant both the server and the configured
	// rate admit it, plus one round trip at the wire's slowest (ideal).
	Ideal time.Duration `json:"ideal"`
	// Pace is, for a sliding-window counter, the makespan its rate alone
	// would allow ((calls − limit) ÷ rate, plus a round trip), which no
	// client reaches there (sliding_bound_test.go): Ideal is that floor.
	// 0 for the other algorithms, whose greedy makespan is their pace.
	Pace time.Duration `json:"pace,omitempty"`
	// Floor, when set, is above Ideal: what a client no delay of the wire
	// can make refused reaches on a GCRA or token bucket whose tolerance
	// is under the wire's jitter (jitterFloor). Figures are held to the
	// greater of the two (Bound).
	Floor    time.Duration `json:"floor,omitempty"`
	Headgate Outcome       `json:"headgate"`
	Baseline Outcome       `json:"baseline"`
}

// Bound is what r's makespans are measured against: the ideal, or the
// floor where one is proven above it.
func (r DrawResult) Bound() time.Duration { return max(r.Ideal, r.Floor) }

// RefusedPct is o's 429s as a percentage of the draw's calls.
func (o Outcome) RefusedPct(calls int) float64 { return 100 * float64(o.Refused) / float64(calls) }

// Ratio is o's makespan ÷ the draw's bound: the ideal, or its floor.
func (r DrawResult) Ratio(o Outcome) float64 { return float64(o.Makespan) / float64(r.Bound()) }

// Deadline is how long after the start a caller with a deadline has: half
// as long again as the ideal, and a second — a deadline the server's real
// rate meets with room, so that a call failed for it is a client's defect,
// not a slow server's.
func (d Draw) Deadline(ideal time.Duration) time.Duration { return ideal + ideal/2 + time.Second }

// ideal is the draw's best makespan: the greedy schedule's span (greedy),
// its first request reaching the server a slow leg (slowLeg) after the
// start and its last answer a slow leg after it was admitted. A request
// sent at the start may arrive a jitter sooner: where a clock window
// turns within that jitter, a lucky batch spends the window before the
// turn too, and comes in under this ideal (at most one window, in at most
// jitter ÷ window of the clock-window draws).
func (d Draw) ideal() (time.Duration, error) {
	at, err := d.greedy(FamilyStart.Add(d.Phase).Add(d.slowLeg()))
	if err != nil {
		return 0, err
	}
	return at[len(at)-1].Sub(at[0]) + 2*d.slowLeg(), nil
}

// greedy is when the server admits each call of the batch, in order, when
// every call is sent the instant the server's limiter (quotatest.Limiter,
// the server's own) and the configured rate of some client with calls left both
// admit it, from first (the first request's arrival). Greedy is the best
// schedule against every algorithm but the sliding-window counter, where
// it is within 1 % of the floor (floor.go).
func (d Draw) greedy(first time.Time) ([]time.Time, error) {
	lim, err := quotatest.NewLimiter(d.config())
	if err != nil {
		return nil, err
	}
	type pacedClient struct {
		left int
		tat  time.Time // the configured GCRA's theoretical arrival time (at the server)
	}
	rate, burst := d.configured()
	var interval, tau time.Duration
	if rate > 0 {
		interval = d.Window / time.Duration(rate)
		tau = time.Duration(burst-1) * interval
	}
	clients := make([]pacedClient, d.Clients)
	for c := range clients {
		calls, _ := d.share(c)
		clients[c] = pacedClient{left: len(calls), tat: first}
	}
	admitted := make([]time.Time, 0, d.Calls)
	for at := first; len(admitted) < d.Calls; {
		// The client whose configured rate lets it go first (most calls left on a tie).
		pick, next := -1, time.Time{}
		for c, cl := range clients {
			if cl.left == 0 {
				continue
			}
			e := at
			if rate > 0 {
				e = later(e, cl.tat.Add(-tau))
			}
			if pick < 0 || e.Before(next) || e.Equal(next) && cl.left > clients[pick].left {
				pick, next = c, e
			}
		}
		ok, wait := lim.Take(next)
		if !ok {
			at = next.Add(wait)
			continue
		}
		cl := &clients[pick]
		cl.left--
		if rate > 0 {
			cl.tat = later(cl.tat, next).Add(interval)
		}
		at = next
		admitted = append(admitted, next)
	}
	return admitted, nil
}

// jitterFloor is, on a GCRA or token bucket, the makespan of a client
// that no delay of the wire can make refused (0 on the windowed
// algorithms, and with no jitter). It is above the ideal where the
// server's tolerance is under the wire's jitter J.
//
// The proof: legs take L to L + J. Of requests j < k sent at s_j ≤ s_k,
// the wire can hold j back J, send k at once and land every request
// between them in [s_j + J, s_k]: k − j + 1 arrivals within s_k − s_j − J
// (at one instant when that is not positive). The server admits at most
// burst + ⌊w / I⌋ requests within any w, so a client never refused sends
// s_k ≥ s_j + (k − j + 1 − burst)·I + J whenever k − j ≥ burst (fewer
// may arrive at once): jitterSchedule, the least such schedule. Its last
// request's legs take 2L + J on average. With J at most the tolerance
// (burst − 1)·I that is the ideal; above it the long-run pace falls to
// burst requests per I + J. Several clients are held to it together: the
// server sees the union of their requests.
func (d Draw) jitterFloor() time.Duration {
	if d.windowed() || d.Jitter == 0 || d.Calls <= d.Burst {
		return 0
	}
	s := jitterSchedule(d.Calls, d.Burst, d.Window/time.Duration(d.Limit), d.Jitter)
	return s[len(s)-1] + 2*d.Latency + d.Jitter
}

// jitterSchedule is the least schedule of n sends (offsets from the first)
// that no delay up to jitter gets refused by a GCRA of burst and interval:
// the burst at once, then each request at the soonest that every window
// since an earlier one allows (jitterFloor).
func jitterSchedule(n, burst int, interval, jitter time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for k := burst; k < n; k++ {
		for m := burst; m <= k; m++ {
			s[k] = max(s[k], s[k-m]+time.Duration(m-burst+1)*interval+jitter)
		}
	}
	return s
}

// pace is a sliding-window counter's pace makespan (DrawResult.Pace).
func (d Draw) pace() time.Duration {
	if d.Algorithm != quotatest.SlidingWindow {
		return 0
	}
	return time.Duration(max(0, d.Calls-d.Limit))*d.Window/time.Duration(d.Limit) + 2*d.slowLeg()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// RunFamilyDraw runs draw d's batch through headgate's clients, or with
// baseline the baseline's, each on a fresh server, and measures it. It
// must run in a testing/synctest bubble: it waits until FamilyStart plus
// the draw's phase, which in virtual time is instant. trace, if set, gets
// the draw's per-request trace, client by client (trace.go).
func RunFamilyDraw(ctx context.Context, d Draw, baseline bool, ideal time.Duration, trace io.Writer) (Outcome, error) {
	time.Sleep(time.Until(FamilyStart.Add(d.Phase)))
	p, err := quotatest.New(d.config())
	if err != nil {
		return Outcome{}, err
	}
	rate, burst := d.configured()
	build := transportClient
	if baseline {
		build = baselineClient
	}
	sides := make([]*clientSide, d.Clients)
	clients := make([]*client, d.Clients)
	for c := range d.Clients {
		sides[c] = newClientSide(newJitterWire(p.Transport(), d.Latency, d.Jitter, splitmix(d.Seed^uint64(d.Index)<<8^uint64(c))))
		sides[c].trace = trace != nil
		clients[c], err = build(clientEnv{
			url: "http://quotatest.invalid", rate: rate, burst: max(1, burst), period: d.Window, learn: d.Configured == ConfiguredNone,
			tries: familyTries, base: sides[c], observer: sides[c].heard,
		})
		if err != nil {
			return Outcome{}, err
		}
	}

	var o Outcome
	var mu sync.Mutex // guards o's call counts
	start := time.Now()
	deadline := start.Add(d.Deadline(ideal))
	var wg sync.WaitGroup
	for c, cl := range clients {
		calls, workers := d.share(c)
		var next atomic.Int64
		for j := range workers {
			wg.Go(func() {
				cctx := ctx
				if d.hasDeadline(j) {
					var cancel context.CancelFunc
					cctx, cancel = context.WithDeadline(ctx, deadline)
					defer cancel()
				}
				for i := int(next.Add(1)) - 1; i < len(calls); i = int(next.Add(1)) - 1 {
					err := cl.call(cctx, calls[i])
					mu.Lock()
					switch {
					case err == nil:
					case errors.Is(err, context.DeadlineExceeded):
						o.Deadline++
					default:
						o.Failed++
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	o.Makespan = time.Since(start)

	arrivals := providerArrivals(p)
	o.Sent = len(arrivals)
	for _, a := range arrivals {
		if a.Status == 429 {
			o.Refused++
		}
	}
	sends := make([][]time.Time, len(sides))
	for c, s := range sides {
		for _, ts := range s.sends {
			sends[c] = append(sends[c], ts...)
		}
	}
	o.ConfiguredBroken, o.ConfiguredError = d.configuredBroken(sends)
	if trace != nil {
		who := "headgate transport"
		if baseline {
			who = "x/time/rate + Retry-After (baseline)"
		}
		for c, s := range sides {
			writeTrace(trace, fmt.Sprintf("%s · client %d of %d · %s", who, c+1, d.Clients, d), start, s.tries, arrivals)
		}
	}
	return o, nil
}

// configuredBroken is how many clients' sends (sends[c], client c's, in any
// order) broke the configured rate and burst, and the first one's broken
// window; with no rate configured, 0.
func (d Draw) configuredBroken(sends [][]time.Time) (int, string) {
	rate, burst := d.configured()
	if rate == 0 {
		return 0, ""
	}
	n, first := 0, ""
	for _, times := range sends {
		if err := quotatest.CheckTimes(times, max(1, burst), d.Window/time.Duration(rate), configuredSlack); err != nil {
			n++
			if first == "" {
				first = err.Error()
			}
		}
	}
	return n, first
}

// providerArrivals is p's record as the matrix's arrivals.
func providerArrivals(p *quotatest.Provider) []Arrival {
	var out []Arrival
	for _, a := range p.Arrivals() {
		out = append(out, Arrival{At: a.At, Call: callOf(a.Path), Status: a.Status, Paused: a.Outcome == quotatest.RefusedPause})
	}
	return out
}
