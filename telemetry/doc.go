// Package telemetry reports headgate budgets as OpenTelemetry metrics: why
// calls waited and for how long, how often servers pushed back, and the
// pace each budget keeps. It depends on the OpenTelemetry metric API (and
// its attribute package) only: the program chooses the SDK and the
// exporter (Prometheus, OTLP…).
//
// # The model
//
// An Observer holds the instruments. Its Observe method is a core.Observer
// that turns the budget's events into counts and a histogram, as they
// happen; Register adds the gauges, read from each budget at every
// collection. Every measurement carries the budget's name (core.WithName).
// The observer is called outside the budget's lock and the gauges read the
// budget through its public methods, so neither can deadlock with the
// budget or the SDK.
//
// # Instruments
//
//	name                             instrument                    unit         attributes                                            from
//	headgate.budget.wait.duration    Float64Histogram              s            headgate.budget.name, headgate.budget.wait.reason     Paced, Throttled, Paused, SlotWait events
//	headgate.budget.pushbacks        Int64Counter                  {response}   headgate.budget.name, http.response.status_code       Pushback events
//	headgate.budget.rate.changes     Int64Counter                  {change}     headgate.budget.name, headgate.budget.rate.direction  RateChanged events
//	headgate.budget.leaked_bodies    Int64Counter                  {body}       headgate.budget.name                                  LeakedBody events
//	headgate.budget.store.failures   Int64Counter                  {outage}     headgate.budget.name                                  StoreFailure events
//	headgate.budget.rate.effective   Float64ObservableGauge        {request}/s  headgate.budget.name                                  Budget.EffectiveRate
//	headgate.budget.rate.configured  Float64ObservableGauge        {request}/s  headgate.budget.name                                  Budget.Rate
//	headgate.budget.pause.remaining  Float64ObservableGauge        s            headgate.budget.name                                  Budget.PauseRemaining
//	headgate.budget.slot.usage       Int64ObservableUpDownCounter  {request}    headgate.budget.name                                  Budget.InFlight
//
// Attribute values:
//
//   - headgate.budget.name: the budget's name, "" for a budget without one.
//   - headgate.budget.wait.reason: "paced" (the turn at the configured rate),
//     "throttled" (at a rate adaptive throttling or the server's quota
//     lowered), "paused" (a server pause), "slot_wait" (a concurrency slot).
//   - http.response.status_code: the status of the response that asked for
//     the pause, an integer (429, 503, 403, or 200 when its headers said the
//     quota was spent), as in OpenTelemetry's HTTP semantic conventions.
//   - headgate.budget.rate.direction: "decrease", "increase" or "unchanged".
//
// The names follow the OpenTelemetry semantic conventions' rules: a
// headgate.budget namespace, counters of countable things pluralized with
// a {annotation} unit and no _total, durations in seconds, an UpDownCounter
// (not pluralized) for the slots in use, which sum across budgets. The
// wait histogram advises DefaultWaitBuckets (1 ms to 1 h; WithWaitBuckets
// to change them). A Prometheus exporter shows them as
// headgate_budget_wait_duration_seconds, headgate_budget_pushbacks_total,
// headgate_budget_rate_changes_total, headgate_budget_leaked_bodies_total,
// headgate_budget_rate_effective_per_second,
// headgate_budget_rate_configured_per_second,
// headgate_budget_pause_remaining_seconds and headgate_budget_slot_usage,
// with labels headgate_budget_name and so on.
//
// Reading them: a steady rise of pushbacks means the configured rate is
// too high for the provider; waits with reason "paced" mean the budget is
// keeping the configured pace (raise it if the provider allows more);
// "throttled" and an effective rate below the configured one mean adaptive
// throttling is holding the budget down after refusals. A Disabled budget
// reports its unlimited rate as a very large number (about 2.1e18/s), and
// slot usage is always 0 for a budget without core.WithMaxInFlight.
//
// # Quick start
//
//	obs, err := telemetry.NewObserver(meterProvider)
//	if err != nil {
//		return err
//	}
//	budget, err := core.NewBudget(core.PerSecond(10), core.WithName("github"),
//		core.WithObserver(core.Observers(obs.Observe, core.SlogObserver(logger))))
//	if err != nil {
//		return err
//	}
//	reg, err := obs.Register(budget)
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//
// core.Observers combines the metrics with core.SlogObserver's log records.
package telemetry
