package webhook

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// admissions counts responses by webhook and outcome; controller-runtime
// already records latency and in-flight requests per webhook path.
var admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mandate_admissions_total",
	Help: "Admission responses by webhook (mutate, validate) and outcome (allowed, denied, error) and HTTP code.",
}, []string{"webhook", "outcome", "code"})

func init() {
	metrics.Registry.MustRegister(admissions)
}

// observe counts resp and returns it.
func observe(webhook string, resp admission.Response) admission.Response {
	outcome, code := "allowed", int32(200)
	if resp.Result != nil && resp.Result.Code != 0 {
		code = resp.Result.Code
	}
	switch {
	case resp.Allowed:
	case code == 403:
		outcome = "denied"
	default:
		outcome = "error"
	}
	admissions.WithLabelValues(webhook, outcome, strconv.Itoa(int(code))).Inc()
	return resp
}
