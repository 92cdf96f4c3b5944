package envtest

import (
	"os"
	"path/filepath"
	"testing"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WriteKubeconfig writes a kubeconfig for an admin (system:masters) user of
// the API server into a temporary file and returns its path, for code under
// test that reads a kubeconfig as users give it one.
func (e *Env) WriteKubeconfig(t testing.TB, user string) string {
	t.Helper()
	u, err := e.Environment.AddUser(crenvtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("envtest: unable to add user %s: %v", user, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("envtest: unable to write a kubeconfig for %s: %v", user, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatalf("envtest: %v", err)
	}
	return path
}
