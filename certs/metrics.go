package certs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// expiry is mandate_certificate_expiry_timestamp_seconds{cert="ca|serving"}:
// alert when it comes near, since rotation should have renewed it long before.
var expiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "mandate_certificate_expiry_timestamp_seconds",
	Help: "When the certificate expires, in seconds since the epoch: cert=\"ca\" is the active CA, cert=\"serving\" this replica's serving certificate. Rotation renews each at two thirds of its life by default.",
}, []string{"cert"})

func init() {
	metrics.Registry.MustRegister(expiry)
}

func setExpiry(ca, serving time.Time) {
	expiry.WithLabelValues("ca").Set(float64(ca.Unix()))
	expiry.WithLabelValues("serving").Set(float64(serving.Unix()))
}
