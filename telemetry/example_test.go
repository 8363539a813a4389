package telemetry_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/telemetry"
)

// ExampleObserver reports a budget's pushbacks and gauges to an SDK meter
// provider (read here by a ManualReader; a program would use a Prometheus
// or OTLP exporter).
func ExampleObserver() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := telemetry.NewObserver(mp)
	if err != nil {
		fmt.Println(err)
		return
	}
	budget := core.MustBudget(core.PerSecond(10), core.WithName("github"), core.WithObserver(obs.Observe))
	reg, err := obs.Register(budget)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()

	// The server refuses a call and asks for a 30-second pause: every caller
	// waits, but a pause alone does not slow the pace.
	budget.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}}, time.Time{})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range data.DataPoints {
				fmt.Printf("%s%s = %d\n", m.Name, labels(dp.Attributes), dp.Value)
			}
		case metricdata.Gauge[float64]:
			for _, dp := range data.DataPoints {
				if m.Name == telemetry.MetricPauseRemaining {
					fmt.Printf("%s%s = %.0f\n", m.Name, labels(dp.Attributes), dp.Value) // 30, less a moment
					continue
				}
				fmt.Printf("%s%s = %v\n", m.Name, labels(dp.Attributes), dp.Value)
			}
		}
	}
	// Output:
	// headgate.budget.pushbacks{headgate.budget.name=github,http.response.status_code=429} = 1
	// headgate.budget.rate.effective{headgate.budget.name=github} = 10
	// headgate.budget.rate.configured{headgate.budget.name=github} = 10
	// headgate.budget.pause.remaining{headgate.budget.name=github} = 30
	// headgate.budget.slot.usage{headgate.budget.name=github} = 0
}

// labels renders an attribute set as {k=v,...}.
func labels(set attribute.Set) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return "{" + strings.Join(parts, ",") + "}"
}
