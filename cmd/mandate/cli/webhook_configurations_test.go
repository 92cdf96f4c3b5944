package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

// TestWebhookConfigurationsCommand: what the command prints is
// webhook.Configurations for its flags, and every bad flag is exit 2 with
// a message that names it.
func TestWebhookConfigurationsCommand(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	pem := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	require.NoError(t, os.WriteFile(ca, pem, 0o600))
	notPEM := filepath.Join(dir, "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))

	code, out, errText := run(t, "webhook-configurations", "--service", "mandate-system/mandate:8443", "--ca-bundle", ca,
		"--namespace", "mandate-system", "--failure-policy", "Ignore", "--timeout-seconds", "5")
	require.Equal(t, 0, code, errText)
	docs := strings.Split(out, "\n---\n")
	require.Len(t, docs, 2)
	var gotM admissionregistrationv1.MutatingWebhookConfiguration
	var gotV admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &gotM))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &gotV))
	wantM, wantV := webhook.Configurations(webhook.RegistrationOptions{
		Service:  &webhook.ServiceReference{Namespace: "mandate-system", Name: "mandate", Port: 8443},
		CABundle: pem, Namespace: "mandate-system", FailurePolicy: ptr.To(admissionregistrationv1.Ignore), TimeoutSeconds: 5,
	})
	assert.Equal(t, wantM.Webhooks, gotM.Webhooks)
	assert.Equal(t, wantV.Webhooks, gotV.Webhooks)
	assert.Equal(t, "MutatingWebhookConfiguration", gotM.Kind)
	assert.Equal(t, webhook.DefaultNamespaceSelector().MatchExpressions[0], gotM.Webhooks[0].NamespaceSelector.MatchExpressions[0],
		"only namespaces labelled with a tenant by default")

	// --namespace-selector: the same selector spelled out, and "" for
	// every namespace (the system ones and serve's own still excluded).
	for sel, want := range map[string]*metav1.LabelSelector{
		workload.LabelTenant: nil,
		"":                   {},
		"team in (a,b)":      {MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}},
	} {
		code, out, errText := run(t, "webhook-configurations", "--url", "https://a:1", "--ca-bundle", ca, "--namespace", "mandate-system",
			"--namespace-selector", sel)
		require.Equal(t, 0, code, errText)
		docs := strings.Split(out, "\n---\n")
		require.Len(t, docs, 2)
		var gotM admissionregistrationv1.MutatingWebhookConfiguration
		require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &gotM))
		wantM, _ := webhook.Configurations(webhook.RegistrationOptions{URL: "https://a:1", CABundle: pem, Namespace: "mandate-system", NamespaceSelector: want})
		assert.Equal(t, wantM.Webhooks[0].NamespaceSelector, gotM.Webhooks[0].NamespaceSelector, "--namespace-selector %q", sel)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ca-bundle", ca}, "exactly one of --url and --service"},
		{[]string{"--url", "https://a:1", "--service", "a/b", "--ca-bundle", ca}, "exactly one of --url and --service"},
		{[]string{"--url", "http://a:1", "--ca-bundle", ca}, "https only"},
		{[]string{"--url", "https://a:1"}, "--ca-bundle is required"},
		{[]string{"--url", "https://a:1", "--ca-bundle", notPEM}, "holds no PEM certificate"},
		{[]string{"--url", "https://a:1", "--ca-bundle", filepath.Join(dir, "missing")}, "unable to read --ca-bundle"},
		{[]string{"--service", "mandate", "--ca-bundle", ca}, "want NAMESPACE/NAME[:PORT]"},
		{[]string{"--service", "a/b:99999", "--ca-bundle", ca}, "is not 1-65535"},
		{[]string{"--url", "https://a:1", "--ca-bundle", ca, "--failure-policy", "fail"}, "want Fail or Ignore"},
		{[]string{"--url", "https://a:1", "--ca-bundle", ca, "--timeout-seconds", "31"}, "out of range (1-30)"},
		{[]string{"--url", "https://a:1", "--ca-bundle", ca, "--namespace-selector", "a in b"}, "--namespace-selector"},
	} {
		code, out, errText := run(t, append([]string{"webhook-configurations"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errText, tc.want, "%v", tc.args)
	}
}
