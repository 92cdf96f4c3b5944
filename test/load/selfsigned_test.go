//go:build load

package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/webhook"
)

// TestSelfSignedServe runs `mandate serve --certs-mode selfSigned` as a
// process with an empty certificate directory against the real API server:
// it creates the CA Secret, sets the caBundle of every webhook, writes its
// serving certificate before its webhook server starts, the API server
// admits pods through it, and /metrics reports both expiries. A restart
// keeps the CA and the still valid serving certificate.
func TestSelfSignedServe(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	hooks := h.env.Environment.WebhookInstallOptions
	servingAddr := net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort))
	require.NoError(t, h.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mandate-system"}}))

	h.kill()
	dir := t.TempDir()
	t.Setenv("MANDATE_CERTS_EXTRA_HOSTS", hooks.LocalServingHost) // the webhooks reach it by URL
	h.args = append(h.args, "--cert-dir", dir, "--namespace", "mandate-system", "--certs-mode", "selfSigned",
		"--certs-secret-name", "mandate-webhook-ca", "--certs-webhook-configuration", webhook.ConfigurationName)
	h.startServe()
	h.waitReady(60 * time.Second)

	var secret corev1.Secret
	require.NoError(t, h.env.Client.Get(ctx, types.NamespacedName{Namespace: "mandate-system", Name: "mandate-webhook-ca"}, &secret))
	ca, err := certs.ParseKeyPair(secret.Data[certs.SecretCACert], secret.Data[certs.SecretCAKey])
	require.NoError(t, err)
	for _, b := range caBundles(t, h) {
		require.Len(t, b, 1)
		require.True(t, b[0].Equal(ca.Cert), "every webhook's caBundle is the Secret's CA")
	}
	served := mustServed(t, servingAddr)
	require.NoError(t, certs.Verify(served, ca.Cert, []string{hooks.LocalServingHost, "mandate.mandate-system.svc"}, time.Now()))

	// The API server calls the webhooks over TLS with the new caBundle.
	deadline := time.Now().Add(envtest.Timeout(30 * time.Second))
	var createErr error
	for time.Now().Before(deadline) {
		if createErr = h.create(ctx, gpuPod("team-3", "selfsigned", "build"), false); createErr == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, createErr, "a pod create through the self-signed webhook")
	var pod corev1.Pod
	require.NoError(t, h.env.Client.Get(ctx, types.NamespacedName{Namespace: "team-3", Name: "selfsigned"}, &pod))
	require.Contains(t, pod.Annotations, scheduler.AnnotationDirectives, "decided by Mandate")

	metrics := h.scrape(t)
	for cert, notAfter := range map[string]time.Time{"ca": ca.Cert.NotAfter, "serving": served.NotAfter} {
		line := fmt.Sprintf(`mandate_certificate_expiry_timestamp_seconds{cert=%q} `, cert)
		i := strings.Index(metrics, line)
		require.GreaterOrEqual(t, i, 0, "/metrics has %s", line)
		value := strings.Fields(metrics[i+len(line):])[0]
		got, err := strconv.ParseFloat(value, 64)
		require.NoError(t, err)
		require.InDelta(t, float64(notAfter.Unix()), got, 1, "%s expiry", cert)
	}

	// A restart keeps the CA and the serving certificate.
	h.kill()
	h.startServe()
	h.waitReady(60 * time.Second)
	var again corev1.Secret
	require.NoError(t, h.env.Client.Get(ctx, types.NamespacedName{Namespace: "mandate-system", Name: "mandate-webhook-ca"}, &again))
	require.Equal(t, secret.ResourceVersion, again.ResourceVersion, "the CA Secret is untouched by a restart")
	require.True(t, mustServed(t, servingAddr).Equal(served), "the serving certificate is kept")
	require.NoError(t, h.create(ctx, gpuPod("team-3", "selfsigned-after-restart", "build"), false))
	fmt.Printf("selfSigned: mandate serve created CA %s, set 3 caBundles, served %s; pods admitted before and after a restart\n",
		ca.Cert.Subject.CommonName, served.Subject.CommonName)
}

func (h *harness) scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + h.metrics + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
