package telemetry

import (
	"context"
	"errors"

	"github.com/headgate-go/headgate/core"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope (the meter's name) of every
// instrument this package creates.
const ScopeName = "github.com/headgate-go/headgate/telemetry"

// The names of the instruments, as the table in the package documentation
// describes them.
const (
	MetricWaitDuration   = "headgate.budget.wait.duration"
	MetricPushbacks      = "headgate.budget.pushbacks"
	MetricRateChanges    = "headgate.budget.rate.changes"
	MetricLeakedBodies   = "headgate.budget.leaked_bodies"
	MetricStoreFailures  = "headgate.budget.store.failures"
	MetricEffectiveRate  = "headgate.budget.rate.effective"
	MetricConfiguredRate = "headgate.budget.rate.configured"
	MetricPauseRemaining = "headgate.budget.pause.remaining"
	MetricSlotUsage      = "headgate.budget.slot.usage"
)

// The attribute keys the instruments carry.
const (
	// AttrBudgetName is the budget's name (core.WithName), on every
	// instrument; "" for a budget without one.
	AttrBudgetName = attribute.Key("headgate.budget.name")
	// AttrWaitReason is why a call waited, on MetricWaitDuration:
	// "paced", "throttled", "paused" or "slot_wait" (core.Reason.String).
	AttrWaitReason = attribute.Key("headgate.budget.wait.reason")
	// AttrRateDirection is which way a rate change went, on
	// MetricRateChanges: "decrease", "increase" or "unchanged".
	AttrRateDirection = attribute.Key("headgate.budget.rate.direction")
	// AttrStatusCode is the status of the response that pushed back, on
	// MetricPushbacks: the OpenTelemetry semantic convention's
	// http.response.status_code, an integer.
	AttrStatusCode = attribute.Key("http.response.status_code")
)

// DefaultWaitBuckets are the explicit bucket boundaries, in seconds, that
// MetricWaitDuration advises by default: from a millisecond of pacing to
// an hour-long server pause (core.DefaultMaxPause).
var DefaultWaitBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// An Observer records budgets' events and state as OpenTelemetry metrics.
// Pass its Observe method to core.WithObserver for the events (waits,
// pushbacks, rate changes, leaked bodies), and Register each budget for
// the gauges (effective and configured rate, pause remaining, slots in
// use). One Observer serves any number of budgets, told apart by their
// names. It is safe for concurrent use.
type Observer struct {
	meter metric.Meter

	waits         metric.Float64Histogram
	pushbacks     metric.Int64Counter
	rateChanges   metric.Int64Counter
	leakedBodies  metric.Int64Counter
	storeFailures metric.Int64Counter

	effectiveRate  metric.Float64ObservableGauge
	configuredRate metric.Float64ObservableGauge
	pauseRemaining metric.Float64ObservableGauge
	slotUsage      metric.Int64ObservableUpDownCounter
}

// NewObserver creates the instruments on a meter of mp named ScopeName and
// returns an Observer that records to them. mp is required: pass your SDK
// MeterProvider, or otel.GetMeterProvider() for the global one. It returns
// an error for an invalid option, or the meter's if an instrument cannot
// be created.
func NewObserver(mp metric.MeterProvider, opts ...Option) (*Observer, error) {
	if mp == nil {
		return nil, errors.New("headgate: telemetry: NewObserver needs a MeterProvider, got nil")
	}
	c := newConfig(opts)
	if c.err != nil {
		return nil, c.err
	}
	m := mp.Meter(ScopeName)
	o := &Observer{meter: m}
	var err, e error
	o.waits, e = m.Float64Histogram(MetricWaitDuration,
		metric.WithUnit("s"),
		metric.WithDescription("Time calls waited for the budget: their turn at the pace, a server pause or a concurrency slot."),
		metric.WithExplicitBucketBoundaries(c.waitBuckets...))
	err = errors.Join(err, e)
	o.pushbacks, e = m.Int64Counter(MetricPushbacks,
		metric.WithUnit("{response}"),
		metric.WithDescription("Responses that asked the budget to pause (429, 503, a spent quota)."))
	err = errors.Join(err, e)
	o.rateChanges, e = m.Int64Counter(MetricRateChanges,
		metric.WithUnit("{change}"),
		metric.WithDescription("Changes of the budget's effective rate: adaptive decreases, recoveries, SetRate."))
	err = errors.Join(err, e)
	o.leakedBodies, e = m.Int64Counter(MetricLeakedBodies,
		metric.WithUnit("{body}"),
		metric.WithDescription("Response bodies never closed, whose concurrency slot the garbage collector freed."))
	err = errors.Join(err, e)
	o.storeFailures, e = m.Int64Counter(MetricStoreFailures,
		metric.WithUnit("{outage}"),
		metric.WithDescription("Times the budget's shared store (core.WithStore) went out of reach."))
	err = errors.Join(err, e)
	o.effectiveRate, e = m.Float64ObservableGauge(MetricEffectiveRate,
		metric.WithUnit("{request}/s"),
		metric.WithDescription("The pace the budget keeps now: the configured rate slowed by adaptive throttling and the server's reported quota."))
	err = errors.Join(err, e)
	o.configuredRate, e = m.Float64ObservableGauge(MetricConfiguredRate,
		metric.WithUnit("{request}/s"),
		metric.WithDescription("The budget's configured rate."))
	err = errors.Join(err, e)
	o.pauseRemaining, e = m.Float64ObservableGauge(MetricPauseRemaining,
		metric.WithUnit("s"),
		metric.WithDescription("Time left in the pause a server asked for; 0 when none."))
	err = errors.Join(err, e)
	o.slotUsage, e = m.Int64ObservableUpDownCounter(MetricSlotUsage,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests holding one of the budget's concurrency slots (core.WithMaxInFlight); 0 without a cap."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Observe records one budget event: a wait in MetricWaitDuration, a
// pushback in MetricPushbacks, a rate change in MetricRateChanges, a leaked
// body in MetricLeakedBodies, a store outage in MetricStoreFailures. It is a
// core.Observer:
//
//	core.WithObserver(obs.Observe)
//
// It takes no lock of the budget's and records nothing when the
// instrument is disabled (no SDK, or a view dropped it).
func (o *Observer) Observe(e core.Event) {
	ctx := context.Background()
	name := AttrBudgetName.String(e.Budget)
	switch e.Reason {
	case core.Paced, core.Throttled, core.Paused, core.SlotWait:
		if o.waits.Enabled(ctx) {
			o.waits.Record(ctx, e.Wait.Seconds(), metric.WithAttributes(name, AttrWaitReason.String(e.Reason.String())))
		}
	case core.Pushback:
		if o.pushbacks.Enabled(ctx) {
			o.pushbacks.Add(ctx, 1, metric.WithAttributes(name, AttrStatusCode.Int(e.Status)))
		}
	case core.RateChanged:
		if o.rateChanges.Enabled(ctx) {
			o.rateChanges.Add(ctx, 1, metric.WithAttributes(name, AttrRateDirection.String(direction(e))))
		}
	case core.LeakedBody:
		if o.leakedBodies.Enabled(ctx) {
			o.leakedBodies.Add(ctx, 1, metric.WithAttributes(name))
		}
	case core.StoreFailure:
		if o.storeFailures.Enabled(ctx) {
			o.storeFailures.Add(ctx, 1, metric.WithAttributes(name))
		}
	}
}

// direction says which way a RateChanged event went.
func direction(e core.Event) string {
	switch {
	case e.NewRate < e.OldRate:
		return "decrease"
	case e.NewRate > e.OldRate:
		return "increase"
	}
	return "unchanged"
}

// Register reports the gauges of budgets (MetricEffectiveRate,
// MetricConfiguredRate, MetricPauseRemaining, MetricSlotUsage), each
// budget under its name, read from the budget at every collection. Give
// every registered budget a distinct name (core.WithName): two budgets of
// one name report the same series. The budgets need not have this
// Observer as their observer.
//
// Call Unregister on the returned registration to stop reporting them
// (when the budgets are retired), or they are reported, and kept from the
// garbage collector, for as long as the meter provider lives.
//
// The gauges read the budget through its public methods, which take the
// budget's lock for a moment; a budget kept in a core.Store (a fleet-wide
// budget) reads its pause from the store at each collection.
func (o *Observer) Register(budgets ...*core.Budget) (metric.Registration, error) {
	type registered struct {
		b   *core.Budget
		opt metric.ObserveOption
	}
	list := make([]registered, 0, len(budgets))
	for _, b := range budgets {
		if b == nil {
			return nil, errors.New("headgate: telemetry: Register of a nil *core.Budget")
		}
		set := attribute.NewSet(AttrBudgetName.String(b.Name()))
		list = append(list, registered{b, metric.WithAttributeSet(set)})
	}
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for _, r := range list {
			obs.ObserveFloat64(o.effectiveRate, r.b.EffectiveRate().PerSecondFloat(), r.opt)
			obs.ObserveFloat64(o.configuredRate, r.b.Rate().PerSecondFloat(), r.opt)
			obs.ObserveFloat64(o.pauseRemaining, r.b.PauseRemaining().Seconds(), r.opt)
			obs.ObserveInt64(o.slotUsage, int64(r.b.InFlight()), r.opt)
		}
		return nil
	}, o.effectiveRate, o.configuredRate, o.pauseRemaining, o.slotUsage)
}
