package certs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
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

// ExpiryReporter exports the expiry of the certificates another issuer
// (cert-manager) writes into a certificate directory, certs.mode files:
// tls.crt as cert="serving" and the earliest of ca.crt, when present, as
// cert="ca". It is a manager.Runnable.
type ExpiryReporter struct {
	Dir string
	// Interval between reads; a minute when zero.
	Interval time.Duration
}

var _ manager.LeaderElectionRunnable = (*ExpiryReporter)(nil)

// NeedLeaderElection is false: every replica reports its own files.
func (e *ExpiryReporter) NeedLeaderElection() bool { return false }

// Start reads the files until ctx ends.
func (e *ExpiryReporter) Start(ctx context.Context) error {
	interval := e.Interval
	if interval == 0 {
		interval = time.Minute
	}
	log := ctrl.LoggerFrom(ctx).WithName("certs")
	for {
		if err := e.Report(); err != nil {
			log.Error(err, "unable to read the certificate expiry", "certDir", e.Dir)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Report reads the files once and sets the gauge.
func (e *ExpiryReporter) Report() error {
	raw, err := os.ReadFile(filepath.Join(e.Dir, CertFile))
	if err != nil {
		return fmt.Errorf("unable to read the serving certificate: %w", err)
	}
	serving, err := ParseCert(raw)
	if err != nil {
		return fmt.Errorf("serving certificate %s: %w", filepath.Join(e.Dir, CertFile), err)
	}
	expiry.WithLabelValues("serving").Set(float64(serving.NotAfter.Unix()))
	raw, err = os.ReadFile(filepath.Join(e.Dir, CAFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to read the CA: %w", err)
	}
	cas, err := ParseBundle(raw)
	if err != nil || len(cas) == 0 {
		return fmt.Errorf("CA %s holds no certificate (%v)", filepath.Join(e.Dir, CAFile), err)
	}
	earliest := cas[0].NotAfter
	for _, c := range cas[1:] {
		if c.NotAfter.Before(earliest) {
			earliest = c.NotAfter
		}
	}
	expiry.WithLabelValues("ca").Set(float64(earliest.Unix()))
	return nil
}
