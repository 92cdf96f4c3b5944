package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var syncedGauge = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "mandate_cache_synced",
	Help: "1 once the informers feeding the cluster state (Nodes, Pods, Namespaces) have synced, else 0.",
})

func init() { metrics.Registry.MustRegister(syncedGauge) }

// ReportSynced exports whether the informers feeding the state have synced.
func ReportSynced(synced bool) {
	if synced {
		syncedGauge.Set(1)
		return
	}
	syncedGauge.Set(0)
}
