package certs_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/certs"
)

func TestIssueServing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := certs.NewCA("test-ca", now, 48*time.Hour)
	require.NoError(t, err)
	require.True(t, ca.Cert.IsCA)

	kp, err := certs.IssueServing(ca, []string{"mandate.ns.svc", "127.0.0.1"}, now, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{"mandate.ns.svc"}, kp.Cert.DNSNames)
	require.Len(t, kp.Cert.IPAddresses, 1)
	require.Equal(t, now.Add(time.Hour), kp.Cert.NotAfter)
	require.Equal(t, now.Add(-certs.Backdate), kp.Cert.NotBefore, "backdated for API servers whose clock is behind")
	require.NoError(t, certs.Verify(kp.Cert, ca.Cert, []string{"mandate.ns.svc", "127.0.0.1"}, now))
	require.Error(t, certs.Verify(kp.Cert, ca.Cert, []string{"other.ns.svc"}, now))
	require.Error(t, certs.Verify(kp.Cert, ca.Cert, []string{"mandate.ns.svc"}, now.Add(2*time.Hour)), "expired")

	// Never beyond the CA's expiry.
	long, err := certs.IssueServing(ca, []string{"mandate.ns.svc"}, now, 30*24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, ca.Cert.NotAfter, long.Cert.NotAfter)

	_, err = certs.IssueServing(ca, nil, now, time.Hour)
	require.ErrorContains(t, err, "at least one host")
}

func TestParseKeyPairMismatch(t *testing.T) {
	a, err := certs.NewCA("a", time.Now(), time.Hour)
	require.NoError(t, err)
	b, err := certs.NewCA("b", time.Now(), time.Hour)
	require.NoError(t, err)
	_, err = certs.ParseKeyPair(a.CertPEM, b.KeyPEM)
	require.ErrorContains(t, err, "does not match")
	_, err = certs.ParseKeyPair([]byte("x"), a.KeyPEM)
	require.ErrorContains(t, err, "no PEM certificate")
}

func TestWriteFilesAtomic(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("a", time.Now(), time.Hour)
	require.NoError(t, err)
	for range 3 {
		kp, err := certs.IssueServing(ca, []string{"x.svc"}, time.Now(), time.Minute)
		require.NoError(t, err)
		require.NoError(t, certs.WriteFiles(dir, kp))
		got, err := certs.ReadFiles(dir)
		require.NoError(t, err)
		require.True(t, got.Cert.Equal(kp.Cert))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{certs.CertFile, certs.KeyFile}, names, "no temporary files left")
	fi, err := os.Stat(filepath.Join(dir, certs.KeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestBundle(t *testing.T) {
	a, err := certs.NewCA("a", time.Now(), time.Hour)
	require.NoError(t, err)
	b, err := certs.NewCA("b", time.Now(), time.Hour)
	require.NoError(t, err)
	bundle := append(append([]byte{}, a.CertPEM...), b.CertPEM...)
	cas, err := certs.ParseBundle(bundle)
	require.NoError(t, err)
	require.Len(t, cas, 2)
	require.True(t, certs.BundleContains(bundle, b.Cert))
	require.False(t, certs.BundleContains(a.CertPEM, b.Cert))
}
