package core

import (
	"context"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// A batch is the workload against a quotatest server, run in
// virtual time: n calls from workers goroutines through NewTransport; a
// refused call is retried through the budget until it succeeds.
type batch struct {
	server   quotatest.Config
	told     Rate // what the budget is told; zero: NewLearningBudget
	burst    int  // the burst it is told (0: told.Requests)
	n        int  // calls
	workers  int  // goroutines
	latency  time.Duration
	pauseAt  int           // the server pauses when this call is sent (0: never)
	pause    time.Duration // for that long
	retryGap time.Duration // a refused call waits this long before its retry; <0: PauseRemaining
}

// batchResult is what a batch measured.
type batchResult struct {
	makespan  time.Duration // until the last call succeeded
	refused   int           // refusals the server sent
	intoPause int           // arrivals during the known pause beyond the first
	retryLag  time.Duration // from the pause's end to the refused call's retry
	arrivals  []quotatest.Arrival
}

func (r batchResult) refusedPct(n int) float64 { return 100 * float64(r.refused) / float64(n) }

func runBatch(t *testing.T, bt batch) batchResult {
	t.Helper()
	cfg := bt.server
	cfg.Latency = bt.latency
	p, err := quotatest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b *Budget
	if bt.told.Requests == 0 {
		b, err = NewLearningBudget()
	} else {
		opts := []Option{}
		if bt.burst > 0 {
			opts = append(opts, WithBurst(bt.burst))
		}
		b, err = NewBudget(bt.told, opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: NewTransport(p.Transport(), b)}
	start := time.Now()
	var next atomic.Int64
	var pauseStart, pauseEnd time.Time
	var mu sync.Mutex
	var pausedCallRetry time.Time
	var last time.Time
	var wg sync.WaitGroup
	for range bt.workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > bt.n {
					return
				}
				if i == bt.pauseAt {
					mu.Lock()
					p.PauseFor(bt.pause)
					pauseStart, pauseEnd = time.Now(), time.Now().Add(bt.pause)
					mu.Unlock()
				}
				first := true
				for {
					resp, err := client.Get("http://api.test/v1")
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						if !first && i == bt.pauseAt {
							mu.Lock()
							pausedCallRetry = time.Now()
							mu.Unlock()
						}
						mu.Lock()
						last = time.Now()
						mu.Unlock()
						break
					}
					first = false
					switch {
					case bt.retryGap < 0:
						time.Sleep(b.PauseRemaining())
					case bt.retryGap > 0:
						time.Sleep(bt.retryGap)
					}
				}
			}
		})
	}
	wg.Wait()
	r := batchResult{makespan: last.Sub(start), refused: p.Refused(), arrivals: p.Arrivals()}
	if bt.pauseAt > 0 {
		// The pause is known once the first refusal during it came back.
		known := time.Time{}
		for _, a := range r.arrivals {
			if a.Outcome == quotatest.RefusedPause {
				known = a.At.Add(bt.latency)
				break
			}
		}
		for _, a := range r.arrivals {
			if a.At.After(known) && a.At.Before(pauseEnd) {
				r.intoPause++
			}
		}
		_ = pauseStart
		if !pausedCallRetry.IsZero() {
			r.retryLag = pausedCallRetry.Sub(pauseEnd)
		}
	}
	return r
}

// ideal is the batch's shortest makespan: (n − burst)/rate, plus the pause.
func (bt batch) ideal() time.Duration {
	interval := bt.server.Period / time.Duration(bt.server.Requests)
	burst := bt.server.Burst
	if burst == 0 {
		burst = bt.server.Requests
	}
	if bt.pause > 0 { // the server forgets what was spent when a pause ends: a second burst
		return time.Duration(bt.n-2*burst)*interval + bt.pause
	}
	return time.Duration(bt.n-burst) * interval
}

func sortedTimes(as []quotatest.Arrival) []time.Time {
	ts := make([]time.Time, len(as))
	for i, a := range as {
		ts[i] = a.At
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts
}

var _ = context.Background
