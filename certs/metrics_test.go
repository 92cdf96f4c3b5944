package certs_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/certs"
)

// gauge reads mandate_certificate_expiry_timestamp_seconds{cert=label}.
func gauge(t *testing.T, label string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "mandate_certificate_expiry_timestamp_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cert" && l.GetValue() == label {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no mandate_certificate_expiry_timestamp_seconds{cert=%q}", label)
	return 0
}

func TestRotatorReportsExpiry(t *testing.T) {
	c, clk, dir := fakeClient(t), newClock(), t.TempDir()
	_, err := newRotator(t, c, clk, dir).Sync(ctx(t))
	require.NoError(t, err)
	kp, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	require.Equal(t, float64(kp.Cert.NotAfter.Unix()), gauge(t, "serving"))
	require.Equal(t, float64(caBundle(t, c)[0].NotAfter.Unix()), gauge(t, "ca"))
}

// TestExpiryReporter: in files mode the expiry of cert-manager's files is
// reported too, so one alert covers both modes.
func TestExpiryReporter(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := certs.NewCA("cm-ca", now, 90*24*time.Hour)
	require.NoError(t, err)
	kp, err := certs.IssueServing(ca, []string{"x.svc"}, now, 7*24*time.Hour)
	require.NoError(t, err)
	r := &certs.ExpiryReporter{Dir: dir}
	require.ErrorContains(t, r.Report(), "unable to read the serving certificate")

	require.NoError(t, certs.WriteFiles(dir, kp))
	require.NoError(t, r.Report(), "ca.crt is optional")
	require.Equal(t, float64(kp.Cert.NotAfter.Unix()), gauge(t, "serving"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, certs.CAFile), ca.CertPEM, 0o600))
	require.NoError(t, r.Report())
	require.Equal(t, float64(ca.Cert.NotAfter.Unix()), gauge(t, "ca"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, certs.CAFile), []byte("junk"), 0o600))
	require.ErrorContains(t, r.Report(), "holds no certificate")
}
