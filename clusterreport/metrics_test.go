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
	assert.Equal(t, 2.0, tenantGauge(mfs, "platform", "nvidia.com/gpu", "used"))
	assert.Equal(t, 16.0, tenantGauge(mfs, "platform", "nvidia.com/gpu", "ceiling"))
	assert.Equal(t, 8.0, tenantGauge(mfs, "platform", "nvidia.com/gpu", "guaranteed"))
	assert.Equal(t, 104.0, tenantGauge(mfs, "research", "nvidia.com/gpu", "used"))

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

// tenantGauge reads one mandate_tenant_gpus series; -1 when absent.
func tenantGauge(mfs []*dto.MetricFamily, tenant, resource, measure string) float64 {
	for _, mf := range mfs {
		if mf.GetName() != "mandate_tenant_gpus" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tenant"] == tenant && labels["resource"] == resource && labels["measure"] == measure {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
