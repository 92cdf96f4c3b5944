package envtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mandate-dev/mandate/certs"
)

// WebhookClientCN is the common name of the client certificate the API
// server presents to admission webhooks under WithWebhookClientCert, the
// one the chart requires (webhook.clientAuth.commonName).
const WebhookClientCN = "kube-apiserver"

// WithWebhookClientCert sets the API server up as docs/security.md sets a
// cluster's up: an AdmissionConfiguration whose webhook kubeconfig gives
// every admission webhook ("*") a client certificate for WebhookClientCN,
// signed by a CA of the Env's own (Env.WebhookClientCA), so a webhook
// server that requires it (mandate serve --client-ca-file) can be tested
// against a real caller. A second API server gets the same.
func WithWebhookClientCert() Option {
	return func(o *options) { o.webhookClientCert = true }
}

// webhookClientDir writes the CA, the API server's client certificate, the
// webhook kubeconfig and the AdmissionConfiguration into a new temporary
// directory and returns it, the CA and the kube-apiserver flag that reads
// them.
func webhookClientDir() (dir string, ca *certs.KeyPair, args [][2]string, err error) {
	now := time.Now()
	if ca, err = certs.NewCA("envtest-webhook-client-ca", now, 24*time.Hour); err != nil {
		return "", nil, nil, err
	}
	client, err := certs.IssueClient(ca, WebhookClientCN, now, 24*time.Hour)
	if err != nil {
		return "", nil, nil, err
	}
	if dir, err = os.MkdirTemp("", "mandate-webhook-client-"); err != nil {
		return "", nil, nil, fmt.Errorf("unable to create the webhook client certificate's directory: %w", err)
	}
	crt, key := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	kubeconfig := filepath.Join(dir, "webhook-kubeconfig.yaml")
	admission := filepath.Join(dir, "admission.yaml")
	files := map[string]string{
		crt: string(client.CertPEM),
		key: string(client.KeyPEM),
		kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: %s
    client-key: %s
`, crt, key),
		admission: fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
`, kubeconfig),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return "", nil, nil, errors.Join(fmt.Errorf("unable to write %s: %w", path, err), removeAll(dir))
		}
	}
	return dir, ca, [][2]string{{"admission-control-config-file", admission}}, nil
}
