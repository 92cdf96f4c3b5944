package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/test/envtest"
)

// TestAuditKubeconfig runs the command against a real API server, whose
// PyTorchJob CRD is not installed: a pod in a namespace no tenant owns
// would be denied (exit 1), a tenant's CPU pod would not, and the missing
// kind is a note.
func TestAuditKubeconfig(t *testing.T) {
	env := envtest.Start(t)
	ctx := context.Background()
	for ns, labels := range map[string]map[string]string{"scratch": nil, "platform": {"mandate.dev/tenant": "platform"}} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}))
		require.NoError(t, env.Client.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shell"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}))
	}
	kubeconfig := env.WriteKubeconfig(t, "auditor")

	code, out, errText := run(t, "audit", "--kubeconfig", kubeconfig)
	require.Equal(t, exitDenied, code, errText)
	assert.Regexp(t, `Pod platform/shell +platform +WOULD CHANGE`, out)
	assert.Regexp(t, `Pod scratch/shell +\(none\) +WOULD DENY +\[tenancy\] TENANT_MISSING`, out)
	assert.Contains(t, out, "2 workloads: 1 would be denied, 1 changed, 0 unchanged\n")
	assert.Contains(t, out, "note: PyTorchJob (kubeflow.org/v1) skipped: the API server does not serve it (CRD not installed)\n")

	code, out, errText = run(t, "audit", "--kubeconfig", kubeconfig, "--namespace", "platform")
	assert.Equal(t, exitAdmitted, code, errText)
	assert.Contains(t, out, "1 workloads: 0 would be denied, 1 changed, 0 unchanged\n")

	t.Run("unreachable API server", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(cfg, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
		code, _, errText := run(t, "audit", "--kubeconfig", cfg)
		assert.Equal(t, exitBadInput, code)
		assert.Contains(t, errText, "unable to list Node (v1)")
	})
}
