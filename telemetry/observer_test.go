package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/telemetry"
)

// TestInstruments checks every instrument's name, kind and unit: the table
// in the package documentation.
func TestInstruments(t *testing.T) {
	r := newRig(t)
	for _, e := range []core.Event{
		{Reason: core.Paced, Wait: time.Millisecond},
		{Reason: core.Pushback, Status: 429, Wait: time.Second},
		{Reason: core.RateChanged, OldRate: 2, NewRate: 1},
		{Reason: core.LeakedBody},
		{Reason: core.StoreFailure, Err: errors.New("down")},
	} {
		r.obs.Observe(e)
	}
	reg, err := r.obs.Register(core.MustBudget(core.PerSecond(1)))
	require.NoError(t, err)
	defer reg.Unregister()

	got := r.collect(t)
	for _, want := range []struct {
		name, unit string
		data       any // the aggregation's type
		monotonic  bool
	}{
		{telemetry.MetricWaitDuration, "s", metricdata.Histogram[float64]{}, false},
		{telemetry.MetricPushbacks, "{response}", metricdata.Sum[int64]{}, true},
		{telemetry.MetricRateChanges, "{change}", metricdata.Sum[int64]{}, true},
		{telemetry.MetricLeakedBodies, "{body}", metricdata.Sum[int64]{}, true},
		{telemetry.MetricStoreFailures, "{outage}", metricdata.Sum[int64]{}, true},
		{telemetry.MetricEffectiveRate, "{request}/s", metricdata.Gauge[float64]{}, false},
		{telemetry.MetricConfiguredRate, "{request}/s", metricdata.Gauge[float64]{}, false},
		{telemetry.MetricPauseRemaining, "s", metricdata.Gauge[float64]{}, false},
		{telemetry.MetricSlotUsage, "{request}", metricdata.Sum[int64]{}, false},
	} {
		m, ok := got[want.name]
		if !assert.Truef(t, ok, "no metric %s", want.name) {
			continue
		}
		assert.Equalf(t, want.unit, m.Unit, "%s unit", want.name)
		assert.NotEmptyf(t, m.Description, "%s description", want.name)
		assert.IsTypef(t, want.data, m.Data, "%s aggregation", want.name)
		if s, ok := m.Data.(metricdata.Sum[int64]); ok {
			assert.Equalf(t, want.monotonic, s.IsMonotonic, "%s monotonic", want.name)
		}
	}
	assert.Len(t, got, 9, "instruments")
}

// TestObserveEveryEventKind feeds each kind of event and checks that it
// reaches its instrument, with its attributes, and no other.
func TestObserveEveryEventKind(t *testing.T) {
	r := newRig(t)
	for _, e := range []core.Event{
		{Budget: "api", Reason: core.Paced, Wait: 100 * time.Millisecond},
		{Budget: "api", Reason: core.Paced, Wait: 300 * time.Millisecond},
		{Budget: "api", Reason: core.Throttled, Wait: 2 * time.Second},
		{Budget: "api", Reason: core.Paused, Wait: 30 * time.Second},
		{Budget: "api", Reason: core.SlotWait, Wait: 50 * time.Millisecond},
		{Budget: "other", Reason: core.Paced, Wait: time.Second},
		{Budget: "api", Reason: core.Pushback, Status: 429, Wait: time.Second},
		{Budget: "api", Reason: core.Pushback, Status: 429, Wait: 2 * time.Second},
		{Budget: "api", Reason: core.Pushback, Status: 503, Wait: time.Second},
		{Budget: "", Reason: core.Pushback, Status: 200, Wait: time.Minute},
		{Budget: "api", Reason: core.RateChanged, Status: 429, OldRate: 10, NewRate: 5},
		{Budget: "api", Reason: core.RateChanged, Status: 200, OldRate: 5, NewRate: 10},
		{Budget: "api", Reason: core.RateChanged, OldRate: 10, NewRate: 10},
		{Budget: "api", Reason: core.LeakedBody},
		{Budget: "api", Reason: core.StoreFailure, Err: errors.New("redis: connection refused")},
		{Budget: "api", Reason: core.StoreRecovered},                           // counted with nothing: the failures say it all
		{Budget: "api", Reason: core.Reason(99), Wait: time.Hour, Status: 418}, // unknown: recorded nowhere
	} {
		r.obs.Observe(e)
	}
	got := r.collect(t)

	assert.Equal(t, map[string]waitPoint{
		"headgate.budget.name=api,headgate.budget.wait.reason=paced":     {2, 0.4},
		"headgate.budget.name=api,headgate.budget.wait.reason=throttled": {1, 2},
		"headgate.budget.name=api,headgate.budget.wait.reason=paused":    {1, 30},
		"headgate.budget.name=api,headgate.budget.wait.reason=slot_wait": {1, 0.05},
		"headgate.budget.name=other,headgate.budget.wait.reason=paced":   {1, 1},
	}, waits(t, got[telemetry.MetricWaitDuration]))
	assert.Equal(t, map[string]int64{
		"headgate.budget.name=api,http.response.status_code=429": 2,
		"headgate.budget.name=api,http.response.status_code=503": 1,
		"headgate.budget.name=,http.response.status_code=200":    1,
	}, sums(t, got[telemetry.MetricPushbacks]))
	assert.Equal(t, map[string]int64{
		"headgate.budget.name=api,headgate.budget.rate.direction=decrease":  1,
		"headgate.budget.name=api,headgate.budget.rate.direction=increase":  1,
		"headgate.budget.name=api,headgate.budget.rate.direction=unchanged": 1,
	}, sums(t, got[telemetry.MetricRateChanges]))
	assert.Equal(t, map[string]int64{"headgate.budget.name=api": 1}, sums(t, got[telemetry.MetricLeakedBodies]))
	assert.Equal(t, map[string]int64{"headgate.budget.name=api": 1}, sums(t, got[telemetry.MetricStoreFailures]))
	assert.Len(t, got, 5, "instruments with data: the gauges report nothing until a budget is registered")
}

// TestObserveNoSDKIsFree: with a provider that records nothing the
// observer builds no attributes.
func TestObserveNoSDKIsFree(t *testing.T) {
	obs, err := telemetry.NewObserver(noop.NewMeterProvider())
	require.NoError(t, err)
	events := []core.Event{
		{Budget: "api", Reason: core.Paced, Wait: time.Second},
		{Budget: "api", Reason: core.Pushback, Status: 429, Wait: time.Second},
		{Budget: "api", Reason: core.RateChanged, OldRate: 2, NewRate: 1},
		{Budget: "api", Reason: core.LeakedBody},
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, e := range events {
			obs.Observe(e)
		}
	})
	assert.Zero(t, allocs, "allocations per event batch with a no-op provider")
}

// TestObserveFromBudget drives a real budget through every event kind but
// LeakedBody (TestLeakedBodyFromTransport) in virtual time. Every permit
// observes its response, as a Transport does. The throttled wait is the
// budget's estimate after the refusal: the metric must record the wait
// the event reported.
func TestObserveFromBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var throttled []time.Duration // the Throttled events' waits (one goroutine at a time)
		record := func(e core.Event) {
			if e.Reason == core.Throttled {
				throttled = append(throttled, e.Wait)
			}
		}
		b := core.MustBudget(core.PerSecond(10), core.WithBurst(1), core.WithMaxInFlight(1),
			core.WithName("api"), core.WithObserver(core.Observers(r.obs.Observe, record)))
		ctx := context.Background()
		acquire := func() core.Permit {
			p, err := b.Acquire(ctx)
			require.NoError(t, err)
			return p
		}

		p := acquire() // t=0, the burst
		got := make(chan core.Permit)
		go func() {
			p, err := b.Acquire(ctx)
			assert.NoError(t, err)
			got <- p
		}()
		time.Sleep(40 * time.Millisecond)
		p.Release()
		p = <-got                                                                // a slot wait of 40ms, then a paced wait of 60ms
		p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}) // a pushback: pause 2s
		p.Observe(http.StatusServiceUnavailable, nil)                            // a refusal: rate cut to 5/s
		p.Release()
		p = acquire() // paused 2s
		p.Observe(http.StatusOK, nil)
		p.Release()
		p = acquire() // throttled 200ms
		p.Observe(http.StatusOK, nil)
		p.Release()
		time.Sleep(20 * time.Second)
		p = acquire()
		p.Observe(http.StatusOK, nil) // recovered
		p.Release()
		require.NoError(t, b.SetRate(core.PerSecond(4)))

		m := r.collect(t)
		require.Len(t, throttled, 1, "Throttled events")
		require.Greater(t, throttled[0], 100*time.Millisecond, "the cut pace holds the call past the told 100ms")
		assert.Equal(t, map[string]waitPoint{
			"headgate.budget.name=api,headgate.budget.wait.reason=slot_wait": {1, 0.04},
			"headgate.budget.name=api,headgate.budget.wait.reason=paced":     {1, 0.06},
			"headgate.budget.name=api,headgate.budget.wait.reason=paused":    {1, 2},
			"headgate.budget.name=api,headgate.budget.wait.reason=throttled": {1, float64(throttled[0].Round(time.Microsecond)) / 1e9},
		}, roundWaits(waits(t, m[telemetry.MetricWaitDuration])))
		assert.Equal(t, map[string]int64{"headgate.budget.name=api,http.response.status_code=429": 1},
			sums(t, m[telemetry.MetricPushbacks]))
		assert.Equal(t, map[string]int64{
			"headgate.budget.name=api,headgate.budget.rate.direction=decrease": 2, // the 503, SetRate(4/s)
			"headgate.budget.name=api,headgate.budget.rate.direction=increase": 1, // the recovery
		}, sums(t, m[telemetry.MetricRateChanges]))
		assert.Zero(t, b.InFlight())
	})
}

// roundWaits rounds sums to the microsecond: float seconds from durations.
func roundWaits(in map[string]waitPoint) map[string]waitPoint {
	for k, v := range in {
		v.Sum = float64(time.Duration(v.Sum*1e9).Round(time.Microsecond)) / 1e9
		in[k] = v
	}
	return in
}

// TestLeakedBodyFromTransport drops a response body and lets the garbage
// collector free its slot (real time: cleanups run outside any bubble).
func TestLeakedBodyFromTransport(t *testing.T) {
	r := newRig(t)
	b := core.MustBudget(core.PerSecond(1000), core.WithMaxInFlight(1), core.WithName("api"),
		core.WithObserver(r.obs.Observe))
	prov, err := quotatest.New(quotatest.Config{Requests: 1000, Period: time.Second})
	require.NoError(t, err)
	c := &http.Client{Transport: core.NewTransport(prov.Transport(), b)}
	func() {
		resp, err := c.Get("http://api.example/v1/items")
		require.NoError(t, err)
		_ = resp.StatusCode // dropped without Close
	}()
	for deadline := time.Now().Add(5 * time.Second); b.InFlight() != 0 && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.Zero(t, b.InFlight(), "the collector never freed the slot")
	assert.Equal(t, map[string]int64{"headgate.budget.name=api": 1}, sums(t, r.collect(t)[telemetry.MetricLeakedBodies]))
}

// TestRegisterGaugesLiveValues reads the gauges as the budget changes, then
// unregisters it.
func TestRegisterGaugesLiveValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		b := core.MustBudget(core.PerSecond(10), core.WithMaxInFlight(4), core.WithName("api"))
		reg, err := r.obs.Register(b)
		require.NoError(t, err)
		const api = "headgate.budget.name=api"
		read := func() (effective, configured, pause float64, slots int64) {
			m := r.collect(t)
			return gauges(t, m[telemetry.MetricEffectiveRate])[api], gauges(t, m[telemetry.MetricConfiguredRate])[api],
				gauges(t, m[telemetry.MetricPauseRemaining])[api], sums(t, m[telemetry.MetricSlotUsage])[api]
		}
		step := func(what string, effective, configured, pause float64, slots int64) {
			t.Helper()
			e, c, p, s := read()
			assert.Equalf(t, []any{effective, configured, pause, slots}, []any{e, c, p, s},
				"%s: effective rate, configured rate, pause remaining, slots", what)
		}

		step("idle", 10, 10, 0, 0)
		p1, err := b.Acquire(context.Background())
		require.NoError(t, err)
		p2, err := b.Acquire(context.Background())
		require.NoError(t, err)
		step("two permits held", 10, 10, 0, 2)
		p1.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}}) // a pause
		p1.Observe(http.StatusServiceUnavailable, nil)                            // a refusal: the rate cut
		step("after a 429 asking for 3s and a 503", 5, 10, 3, 2)
		time.Sleep(1500 * time.Millisecond)
		step("1.5s into the pause", 5, 10, 1.5, 2)
		p1.Release()
		p2.Release()
		require.NoError(t, b.SetRate(core.PerSecond(40)))
		step("after SetRate(40/s), released", 20, 40, 1.5, 0)
		time.Sleep(2 * time.Second)
		step("pause over", 20, 40, 0, 0)

		require.NoError(t, reg.Unregister())
		m := r.collect(t)
		for _, name := range []string{telemetry.MetricEffectiveRate, telemetry.MetricConfiguredRate, telemetry.MetricPauseRemaining, telemetry.MetricSlotUsage} {
			assert.Emptyf(t, m[name].Data, "%s after Unregister", name) // no points, no data
		}
	})
}

func TestRegisterSeveralBudgets(t *testing.T) {
	r := newRig(t)
	a := core.MustBudget(core.PerSecond(5), core.WithName("search"))
	b := core.MustBudget(core.PerMinute(600), core.WithName("export"))
	reg, err := r.obs.Register(a, b)
	require.NoError(t, err)
	defer reg.Unregister()
	m := r.collect(t)
	assert.Equal(t, map[string]float64{"headgate.budget.name=search": 5, "headgate.budget.name=export": 10},
		gauges(t, m[telemetry.MetricConfiguredRate]))
	assert.Equal(t, map[string]int64{"headgate.budget.name=search": 0, "headgate.budget.name=export": 0},
		sums(t, m[telemetry.MetricSlotUsage]))
}

func TestRegisterNilBudget(t *testing.T) {
	r := newRig(t)
	_, err := r.obs.Register(core.MustBudget(core.PerSecond(1)), nil)
	assert.ErrorContains(t, err, "nil *core.Budget")
}

func TestNewObserverNilProvider(t *testing.T) {
	_, err := telemetry.NewObserver(nil)
	assert.ErrorContains(t, err, "needs a MeterProvider")
}

func TestWithWaitBuckets(t *testing.T) {
	bounds := func(r *rig) []float64 {
		r.obs.Observe(core.Event{Reason: core.Paced, Wait: time.Second})
		h := r.collect(t)[telemetry.MetricWaitDuration].Data.(metricdata.Histogram[float64])
		require.Len(t, h.DataPoints, 1)
		return h.DataPoints[0].Bounds
	}
	assert.Equal(t, telemetry.DefaultWaitBuckets, bounds(newRig(t)), "default")
	assert.Equal(t, []float64{0.1, 1, 10}, bounds(newRig(t, telemetry.WithWaitBuckets(0.1, 1, 10))), "WithWaitBuckets")
	assert.Equal(t, telemetry.DefaultWaitBuckets, bounds(newRig(t, telemetry.WithWaitBuckets(), nil)), "empty and nil")
	for _, bad := range [][]float64{{1, 1}, {2, 1}, {0.5, 1, nan()}} {
		_, err := telemetry.NewObserver(noop.NewMeterProvider(), telemetry.WithWaitBuckets(bad...))
		assert.ErrorContainsf(t, err, "strictly increasing", "WithWaitBuckets(%v)", bad)
	}
}

func nan() float64 { var z float64; return z / z }

// TestObserverCallsBackIntoBudget: an observer that reads the budget, and
// collects the metrics (whose gauge callbacks read the budget too), for
// every event kind, does not deadlock: observers run outside the budget's
// lock. Real time, with a watchdog: a deadlock on a mutex is not one that
// synctest reports (and LeakedBody needs the collector, outside any bubble).
func TestObserverCallsBackIntoBudget(t *testing.T) {
	r := newRig(t)
	var b *core.Budget
	seen := map[core.Reason]int{}
	var mu sync.Mutex
	callback := func(e core.Event) {
		_ = b.InFlight()
		_ = b.EffectiveRate()
		_ = b.PauseRemaining()
		_ = b.Rate()
		_ = b.Check(context.Background())
		var rm metricdata.ResourceMetrics // runs Register's callback: reads the budget again
		assert.NoError(t, r.reader.Collect(context.Background(), &rm))
		mu.Lock()
		seen[e.Reason]++
		mu.Unlock()
	}
	b = core.MustBudget(core.PerSecond(50), core.WithBurst(1), core.WithMaxInFlight(1), core.WithName("api"),
		core.WithObserver(core.Observers(r.obs.Observe, callback)))
	reg, err := r.obs.Register(b)
	require.NoError(t, err)
	defer reg.Unregister()
	prov, err := quotatest.New(quotatest.Config{Requests: 1000, Period: time.Second})
	require.NoError(t, err)
	client := &http.Client{Transport: core.NewTransport(prov.Transport(), b)}

	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		// The waits below depend on real timing (the second caller must be
		// parked in the slot wait when the first releases; a stall can let
		// a turn come due before it is asked for), so the round repeats
		// until every kind of wait has been seen, each round checking the
		// callbacks again.
		waited := func() bool {
			mu.Lock()
			defer mu.Unlock()
			return seen[core.SlotWait] > 0 && seen[core.Paced] > 0 && seen[core.Paused] > 0 && seen[core.Throttled] > 0
		}
		for round := 0; round < 100 && !waited(); round++ {
			p, err := b.Acquire(ctx)
			if !assert.NoError(t, err) {
				return
			}
			got := make(chan core.Permit)
			go func() {
				p, err := b.Acquire(ctx) // SlotWait, then Paced
				assert.NoError(t, err)
				got <- p
			}()
			time.Sleep(10 * time.Millisecond)
			p.Observe(http.StatusOK, nil) // every permit observes its response, as a Transport does
			p.Release()
			p = <-got
			p.Observe(http.StatusTooManyRequests, http.Header{"Retry-After-Ms": {"50"}}) // Pushback, RateChanged
			p.Release()
			for range 2 { // Paused, then Throttled
				p, err = b.Acquire(ctx)
				if !assert.NoError(t, err) {
					return
				}
				p.Observe(http.StatusOK, nil)
				p.Release()
			}
			assert.NoError(t, b.SetRate(core.PerSecond(100+round))) // RateChanged
		}
		func() {
			resp, err := client.Get("http://api.example/v1/items")
			if assert.NoError(t, err) {
				_ = resp.StatusCode // dropped without Close: LeakedBody when collected
			}
		}()
		for deadline := time.Now().Add(5 * time.Second); b.InFlight() != 0 && time.Now().Before(deadline); {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("deadlock: an observer calling back into the budget never returned")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, reason := range []core.Reason{core.SlotWait, core.Paced, core.Pushback, core.RateChanged, core.Paused, core.Throttled, core.LeakedBody} {
		assert.NotZerof(t, seen[reason], "no %v event reached the observer", reason)
	}
	assert.Zero(t, b.InFlight())
}

// TestObserverConcurrentSafe sends requests from many goroutines through a
// budget that reports to the observer while the metrics are collected.
func TestObserverConcurrentSafe(t *testing.T) {
	r := newRig(t)
	b := core.MustBudget(core.PerSecond(400), core.WithBurst(1), core.WithMaxInFlight(3), core.WithName("api"),
		core.WithObserver(r.obs.Observe))
	reg, err := r.obs.Register(b)
	require.NoError(t, err)
	defer reg.Unregister()
	prov, err := quotatest.New(quotatest.Config{Requests: 1000, Period: time.Second, Burst: 5})
	require.NoError(t, err)
	client := &http.Client{Transport: core.NewTransport(prov.Transport(), b)}

	stop := make(chan struct{})
	var collector sync.WaitGroup
	collector.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				var rm metricdata.ResourceMetrics
				assert.NoError(t, r.reader.Collect(context.Background(), &rm))
				time.Sleep(time.Millisecond)
			}
		}
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				resp, err := client.Get("http://api.example/v1/items")
				if !assert.NoError(t, err) {
					return
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	close(stop)
	collector.Wait()

	m := r.collect(t)
	var n uint64
	for _, p := range waits(t, m[telemetry.MetricWaitDuration]) {
		n += p.Count
	}
	assert.NotZero(t, n, "80 requests at 400/s with a burst of 1 and 3 slots: some waited")
	assert.Zero(t, b.InFlight())
	assert.Equal(t, int64(0), sums(t, m[telemetry.MetricSlotUsage])["headgate.budget.name=api"])
}
