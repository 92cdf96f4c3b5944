package authoritymetrics_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/authoritymetrics"
	"github.com/mandate-dev/mandate/clusterreport"
)

// TestLoopWaitsUntilReady: no report is computed before Ready says so (serve's
// state synced), and the first one comes once it does.
func TestLoopWaitsUntilReady(t *testing.T) {
	var ready atomic.Bool
	reports := make(chan struct{}, 16)
	var early atomic.Bool
	loop := &authoritymetrics.Loop{
		Interval: time.Hour,
		Ready:    ready.Load,
		Report: func(context.Context) (*clusterreport.Report, error) {
			if !ready.Load() {
				early.Store(true)
			}
			reports <- struct{}{}
			return &clusterreport.Report{BlockedBy: map[string]int{}}, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Start(ctx) }()
	// Polls of Ready pass while it is false; then it turns true.
	for range 3 {
		select {
		case <-reports:
			t.Fatal("a report was computed before the state was ready")
		case <-time.After(150 * time.Millisecond):
		}
	}
	ready.Store(true)
	<-reports
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if early.Load() {
		t.Fatal("a report was computed before the state was ready")
	}
}

// TestLoopWithdrawsWhenItStops: while the loop runs, the gauges carry its
// report; once its context ends (serve stops, or this replica lost the
// Lease and another publishes now) they are back at 0 with no tenant
// series, so a former leader's last report is not read beside the new one.
func TestLoopWithdrawsWhenItStops(t *testing.T) {
	reports := make(chan struct{}, 16)
	loop := &authoritymetrics.Loop{
		Interval: time.Hour,
		Report: func(context.Context) (*clusterreport.Report, error) {
			defer func() { reports <- struct{}{} }()
			return &clusterreport.Report{IdleGPUs: 8, StrandedGPUs: 2, BlockedBy: map[string]int{"quota": 16},
				Tenants: []clusterreport.TenantRow{{Tenant: "research", Resource: "nvidia.com/gpu", Guaranteed: 64, Ceiling: -1, Used: 40}}}, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Start(ctx) }()
	<-reports
	want := map[string]float64{"mandate_idle_gpus": 8, "mandate_stranded_gpus": 2, "mandate_blocked_gpus": 16, "mandate_tenant_gpus": 64 + 40}
	// Publish runs after Report returns: wait for its values.
	deadline := time.Now().Add(10 * time.Second)
	for !equalSums(t, want) {
		if time.Now().After(deadline) {
			t.Fatalf("the report was not published: %v", sums(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ts := sums(t)["mandate_authority_report_timestamp_seconds"]; ts <= 0 {
		t.Fatalf("report timestamp = %v, want > 0", ts)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := sums(t)
	for _, name := range []string{"mandate_idle_gpus", "mandate_stranded_gpus", "mandate_blocked_gpus", "mandate_pending_workloads",
		"mandate_unhealthy_gpus", "mandate_authority_report_timestamp_seconds"} {
		if got[name] != 0 {
			t.Errorf("%s = %v after the loop stopped, want 0", name, got[name])
		}
	}
	if n, ok := seriesCount(t)["mandate_tenant_gpus"]; ok && n != 0 {
		t.Errorf("%d mandate_tenant_gpus series after the loop stopped, want none", n)
	}
	if n := seriesCount(t)["mandate_blocked_gpus"]; n != len(authoritymetrics.Dimensions) {
		t.Errorf("%d mandate_blocked_gpus series after the loop stopped, want one per dimension at 0 (%d)", n, len(authoritymetrics.Dimensions))
	}
}

func equalSums(t *testing.T, want map[string]float64) bool {
	got := sums(t)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// sums are the authority gauges' values, summed over each one's series.
func sums(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, mf := range gather(t) {
		for _, m := range mf.GetMetric() {
			out[mf.GetName()] += m.GetGauge().GetValue()
		}
	}
	return out
}

func seriesCount(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, mf := range gather(t) {
		out[mf.GetName()] = len(mf.GetMetric())
	}
	return out
}

func gather(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}
