package telemetry_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/headgate-go/headgate/telemetry"
)

// rig is an Observer on an SDK meter provider read by a ManualReader.
type rig struct {
	reader *sdkmetric.ManualReader
	obs    *telemetry.Observer
}

func newRig(t *testing.T, opts ...telemetry.Option) *rig {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := telemetry.NewObserver(mp, opts...)
	require.NoError(t, err)
	return &rig{reader: reader, obs: obs}
}

// collect returns the metrics of the telemetry scope, by name.
func (r *rig) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, telemetry.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// key renders an attribute set as "k=v,k=v" in key order.
func key(set attribute.Set) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// sums returns a Sum's points by attribute set.
func sums(t *testing.T, m metricdata.Metrics) map[string]int64 {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	require.Truef(t, ok, "%s is %T, want an int64 sum", m.Name, m.Data)
	out := map[string]int64{}
	for _, dp := range s.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// gauges returns a float64 Gauge's points by attribute set.
func gauges(t *testing.T, m metricdata.Metrics) map[string]float64 {
	t.Helper()
	g, ok := m.Data.(metricdata.Gauge[float64])
	require.Truef(t, ok, "%s is %T, want a float64 gauge", m.Name, m.Data)
	out := map[string]float64{}
	for _, dp := range g.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// waitPoint is a histogram point's count and sum.
type waitPoint struct {
	Count uint64
	Sum   float64
}

// waits returns a float64 Histogram's points by attribute set.
func waits(t *testing.T, m metricdata.Metrics) map[string]waitPoint {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.Truef(t, ok, "%s is %T, want a float64 histogram", m.Name, m.Data)
	out := map[string]waitPoint{}
	for _, dp := range h.DataPoints {
		out[key(dp.Attributes)] = waitPoint{dp.Count, dp.Sum}
	}
	return out
}
