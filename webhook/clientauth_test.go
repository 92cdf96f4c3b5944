package webhook_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/webhook"
)

// TestClientAuthAdmitsOnlyTheAPIServersCertificate runs a TLS server with
// ClientAuth and calls it as an anonymous client, as a client whose
// certificate another CA signed, as one the CA signed for another name,
// and as the API server: only the last gets past the handshake.
func TestClientAuthAdmitsOnlyTheAPIServersCertificate(t *testing.T) {
	now := time.Now()
	ca, err := certs.NewCA("webhook-client-ca", now, time.Hour)
	require.NoError(t, err)
	other, err := certs.NewCA("other-ca", now, time.Hour)
	require.NoError(t, err)
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca.CertPEM, 0o600))

	opt, err := webhook.ClientAuth(caFile, "kube-apiserver")
	require.NoError(t, err)
	calls := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { calls++ }))
	srv.TLS = &tls.Config{}
	webhook.SecureTLS(srv.TLS)
	opt(srv.TLS)
	srv.StartTLS()
	defer srv.Close()

	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	post := func(client *certs.KeyPair) error {
		cfg := &tls.Config{RootCAs: roots}
		if client != nil {
			pair, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
			require.NoError(t, err)
			cfg.Certificates = []tls.Certificate{pair}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Post(srv.URL+"/mutate", "application/json", nil)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	issue := func(signer *certs.KeyPair, cn string) *certs.KeyPair {
		kp, err := certs.IssueClient(signer, cn, now, time.Hour)
		require.NoError(t, err)
		return kp
	}

	assert.Error(t, post(nil), "no client certificate")
	assert.Error(t, post(issue(other, "kube-apiserver")), "signed by another CA")
	assert.Error(t, post(issue(ca, "tenant-a")), "signed by the CA for another name")
	assert.Equal(t, 0, calls, "no refused caller reached a handler")
	require.NoError(t, post(issue(ca, "kube-apiserver")), "the API server's certificate")
	assert.Equal(t, 1, calls)

	t.Run("any name the CA signed without a common name to require", func(t *testing.T) {
		opt, err := webhook.ClientAuth(caFile, "")
		require.NoError(t, err)
		cfg := &tls.Config{}
		opt(cfg)
		assert.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)
		assert.Nil(t, cfg.VerifyConnection)
	})
	t.Run("a CA file without a certificate is refused", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "empty.crt")
		require.NoError(t, os.WriteFile(empty, []byte("not pem"), 0o600))
		_, err := webhook.ClientAuth(empty, "")
		assert.ErrorContains(t, err, "holds no PEM certificate")
		_, err = webhook.ClientAuth(filepath.Join(t.TempDir(), "missing.crt"), "")
		assert.ErrorContains(t, err, "unable to read")
	})
}
