package clusterreport_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/authoritymetrics"
)

// TestAuthorityMetricsFromFixture: published from the fixture's report,
// the controller-runtime registry (what /metrics serves) scrapes with the
// values the fixture implies, and the series are promlint-clean.
func TestAuthorityMetricsFromFixture(t *testing.T) {
	rep := fixtureReport(t)
	authoritymetrics.Publish(rep, float64(time.Unix(1700000000, 0).Unix()))

	want := `
# HELP mandate_idle_gpus Free GPUs on healthy, schedulable nodes.
# TYPE mandate_idle_gpus gauge
mandate_idle_gpus 212
# HELP mandate_stranded_gpus Free GPUs no blocked gang could use at its required topology level.
# TYPE mandate_stranded_gpus gauge
mandate_stranded_gpus 30
# HELP mandate_unhealthy_gpus GPUs on nodes the authority model's health rules mark unhealthy.
# TYPE mandate_unhealthy_gpus gauge
mandate_unhealthy_gpus 16
# HELP mandate_blocked_gpus GPUs wanted by pending workloads that cannot run, by the dimension of what blocks them first.
# TYPE mandate_blocked_gpus gauge
mandate_blocked_gpus{dimension="input"} 0
mandate_blocked_gpus{dimension="preemption"} 0
mandate_blocked_gpus{dimension="priority"} 8
mandate_blocked_gpus{dimension="quota"} 16
mandate_blocked_gpus{dimension="scheduler"} 16
mandate_blocked_gpus{dimension="tenancy"} 0
mandate_blocked_gpus{dimension="topology"} 168
# HELP mandate_pending_workloads Pending workloads that cannot run, by the dimension of what blocks them first.
# TYPE mandate_pending_workloads gauge
mandate_pending_workloads{dimension="input"} 0
mandate_pending_workloads{dimension="preemption"} 0
mandate_pending_workloads{dimension="priority"} 1
mandate_pending_workloads{dimension="quota"} 1
mandate_pending_workloads{dimension="scheduler"} 2
mandate_pending_workloads{dimension="tenancy"} 0
mandate_pending_workloads{dimension="topology"} 3
`
	require.NoError(t, testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want),
		"mandate_idle_gpus", "mandate_stranded_gpus", "mandate_unhealthy_gpus", "mandate_blocked_gpus", "mandate_pending_workloads"))

	got, err := testutil.GatherAndCount(metrics.Registry, "mandate_tenant_gpus")
	require.NoError(t, err)
	assert.Equal(t, 4*len(rep.Tenants), got, "guaranteed, ceiling, used, reserved per tenant and resource")
	mfs, err := metrics.Registry.Gather()
	require.NoError(t, err)
	assert.Equal(t, 2.0, tenantGauge(mfs, "platform", "nvidia.com/gpu", "", "used"))
	assert.Equal(t, 16.0, tenantGauge(mfs, "platform", "nvidia.com/gpu", "", "ceiling"))
	assert.Equal(t, 8.0, tenantGauge(mfs, "platform", "nvidia.com/gpu", "", "guaranteed"))
	assert.Equal(t, 104.0, tenantGauge(mfs, "research", "nvidia.com/gpu", "", "used"))
	assert.Equal(t, -1.0, tenantGauge(mfs, "platform", "nvidia.com/gpu", "NVIDIA-B200", "ceiling"), "no product series where the model sets no product quota")

	// Tenant product's per-product quotas (the example model: H100 120
	// guaranteed of 144, B200 8 of 32, within 128 of 160 for every product
	// together) have series of their own beside the resource's; its pods
	// run on H100 nodes.
	for _, tc := range []struct {
		product, measure string
		want             float64
	}{
		{"", "guaranteed", 128}, {"", "ceiling", 160}, {"", "used", 112},
		{"NVIDIA-H100-80GB-HBM3", "guaranteed", 120}, {"NVIDIA-H100-80GB-HBM3", "ceiling", 144}, {"NVIDIA-H100-80GB-HBM3", "used", 112},
		{"NVIDIA-B200", "guaranteed", 8}, {"NVIDIA-B200", "ceiling", 32}, {"NVIDIA-B200", "used", 0}, {"NVIDIA-B200", "reserved", 0},
	} {
		assert.Equal(t, tc.want, tenantGauge(mfs, "product", "nvidia.com/gpu", tc.product, tc.measure), "product=%q %s", tc.product, tc.measure)
	}

	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "mandate_tenant") || strings.HasPrefix(p.Metric, "mandate_idle") ||
			strings.HasPrefix(p.Metric, "mandate_stranded") || strings.HasPrefix(p.Metric, "mandate_unhealthy") ||
			strings.HasPrefix(p.Metric, "mandate_blocked") || strings.HasPrefix(p.Metric, "mandate_pending") ||
			strings.HasPrefix(p.Metric, "mandate_authority") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

// tenantGauge reads one mandate_tenant_gpus series (product "" the
// resource's); -1 when absent.
func tenantGauge(mfs []*dto.MetricFamily, tenant, resource, product, measure string) float64 {
	for _, mf := range mfs {
		if mf.GetName() != "mandate_tenant_gpus" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tenant"] == tenant && labels["resource"] == resource && labels["product"] == product && labels["measure"] == measure {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
