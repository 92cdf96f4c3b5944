package evictguard

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// refusals counts the guard's refusals: a scheduler's preemption attempt
// on protected work, so its rate is how often schedulers try (a retry loop
// shows as a steady rate).
var refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mandate_evictions_refused_total",
	Help: "Scheduler requests to delete, evict or mark for disruption (DisruptionTarget) a pod Mandate admitted non-preemptible, refused by the eviction guard, by action (delete, evict, mark).",
}, []string{"action"})

// Collectors are the guard's metrics, for tests and linting.
var Collectors = []prometheus.Collector{refusals}

func init() {
	metrics.Registry.MustRegister(Collectors...)
	// Every action starts at 0, so rate() sees the first refusal.
	for _, a := range Actions {
		refusals.WithLabelValues(string(a))
	}
}

// CountRefusal counts one refusal of action.
func CountRefusal(a Action) { refusals.WithLabelValues(string(a)).Inc() }

// Refusals is the number of refusals of action counted in this process
// (for tests that run serve in-process, and for logs).
func Refusals(a Action) float64 {
	m := &dto.Metric{}
	if err := refusals.WithLabelValues(string(a)).Write(m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
