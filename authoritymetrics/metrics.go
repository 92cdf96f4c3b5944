// Package authoritymetrics exports the cluster report as Prometheus
// gauges on /metrics: per tenant the guaranteed, ceiling, used and reserved
// GPUs by resource and GPU product; pending workloads and GPUs blocked by
// authority dimension; idle, stranded and unhealthy GPUs. Label
// cardinality is bounded by the model's tenants, resources and products
// and the fixed dimensions.
package authoritymetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/clusterreport"
)

// Dimensions are the values of the dimension label: the authority
// dimensions, the scheduler's own, and input Mandate cannot read.
var Dimensions = []string{"tenancy", "priority", "quota", "topology", "preemption", "scheduler", "input"}

var (
	tenantGPUs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mandate_tenant_gpus",
		Help: "GPUs of a tenant (rolled up over its subtree) by resource, GPU product and measure: guaranteed and ceiling from the authority model, used and reserved now. An empty product is the resource, every product together; a product's series exist where the model sets a quota for it.",
	}, []string{"tenant", "resource", "product", "measure"})
	pendingWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mandate_pending_workloads",
		Help: "Pending workloads that cannot run, by the dimension of what blocks them first.",
	}, []string{"dimension"})
	blockedGPUs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mandate_blocked_gpus",
		Help: "GPUs wanted by pending workloads that cannot run, by the dimension of what blocks them first.",
	}, []string{"dimension"})
	idleGPUs = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mandate_idle_gpus",
		Help: "Free GPUs on healthy, schedulable nodes.",
	})
	strandedGPUs = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mandate_stranded_gpus",
		Help: "Free GPUs no blocked gang could use at its required topology level.",
	})
	unhealthyGPUs = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mandate_unhealthy_gpus",
		Help: "GPUs on nodes the authority model's health rules mark unhealthy.",
	})
	reportTimestamp = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mandate_authority_report_timestamp_seconds",
		Help: "When the authority metrics were last computed (Unix time); 0 before the first report.",
	})
)

// Collectors are the gauges, for tests and linting.
var Collectors = []prometheus.Collector{tenantGPUs, pendingWorkloads, blockedGPUs, idleGPUs, strandedGPUs, unhealthyGPUs, reportTimestamp}

func init() {
	metrics.Registry.MustRegister(Collectors...)
	for _, d := range Dimensions {
		pendingWorkloads.WithLabelValues(d)
		blockedGPUs.WithLabelValues(d)
	}
}

// Publish sets every gauge from a report; tenants or resources gone from
// the model leave the series.
func Publish(r *clusterreport.Report, unix float64) {
	tenantGPUs.Reset()
	for _, t := range r.Tenants {
		if t.Guaranteed >= 0 {
			tenantGPUs.WithLabelValues(t.Tenant, t.Resource, t.Product, "guaranteed").Set(float64(t.Guaranteed))
		}
		if t.Ceiling >= 0 {
			tenantGPUs.WithLabelValues(t.Tenant, t.Resource, t.Product, "ceiling").Set(float64(t.Ceiling))
		}
		tenantGPUs.WithLabelValues(t.Tenant, t.Resource, t.Product, "used").Set(float64(t.Used))
		tenantGPUs.WithLabelValues(t.Tenant, t.Resource, t.Product, "reserved").Set(float64(t.Reserved))
	}
	workloads := map[string]int{}
	for _, b := range r.Blocked {
		workloads[b.Dimension]++
	}
	for _, d := range Dimensions {
		pendingWorkloads.WithLabelValues(d).Set(float64(workloads[d]))
		blockedGPUs.WithLabelValues(d).Set(float64(r.BlockedBy[d]))
	}
	idleGPUs.Set(float64(r.IdleGPUs))
	strandedGPUs.Set(float64(r.StrandedGPUs))
	unhealthyGPUs.Set(float64(r.UnhealthyGPUs))
	reportTimestamp.Set(unix)
}

// Withdraw sets the gauges back to what a replica that never reported
// exports: 0 and no tenant series. A replica that stopped reporting (it lost
// the Lease to another) would otherwise keep exporting its last report
// beside the new leader's, and the alerts and dashboard, which take the
// maximum over replicas, would read a stale idle or used count for as long
// as it runs.
func Withdraw() {
	tenantGPUs.Reset()
	for _, d := range Dimensions {
		pendingWorkloads.WithLabelValues(d).Set(0)
		blockedGPUs.WithLabelValues(d).Set(0)
	}
	idleGPUs.Set(0)
	strandedGPUs.Set(0)
	unhealthyGPUs.Set(0)
	reportTimestamp.Set(0)
}
