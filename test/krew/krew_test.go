// Package krew tests the kubectl plugin the krew way: the release output
// that `make release` writes for this platform (hack/release), its krew
// manifest validated by krew's own validator and installed by krew itself
// from the archive (which checks its sha256), and `kubectl mandate explain`
// run through the pinned kubectl against a real API server.
package krew

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

const version = "v0.0.0-krewtest"

// root is the repository root: the tests run in test/krew.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	require.NoError(t, err)
	return dir
}

// tool is a pinned tool of bin/k8s; a missing one fails with the command
// that builds it.
func tool(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(root(t), "bin", "k8s", name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing (%v): run `make envtest-assets` (or hack/envtest-assets.sh krew kubectl)", path, err)
	}
	return path
}

// release runs hack/release for this platform into a temporary directory
// and returns the manifest and the archive.
func release(t *testing.T) (manifest, archive string) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("go", "run", "./hack/release", "--version", version, "--commit", "krewtest",
		"--platforms", runtime.GOOS+"/"+runtime.GOARCH, "--out", out)
	cmd.Dir = root(t)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "hack/release: %s", b)
	manifest = filepath.Join(out, "mandate.yaml")
	archive = filepath.Join(out, "kubectl-mandate_"+version+"_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	for _, f := range []string{manifest, archive, filepath.Join(out, "SHA256SUMS")} {
		_, err := os.Stat(f)
		require.NoError(t, err, "the release output lacks %s", filepath.Base(f))
	}
	return manifest, archive
}

// run runs a command and returns its output and exit code (-1 when it
// could not start).
func run(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	t.Fatalf("%s: %v", name, err)
	return "", -1
}

// TestKrewPlugin: the manifest validates against krew's rules; krew
// installs the plugin from this build's archive, and refuses it when the
// manifest's sha256 is not the archive's; kubectl finds the installed
// plugin and `kubectl mandate explain` decides a Job on a real API server.
func TestKrewPlugin(t *testing.T) {
	validator, krew, kubectl := tool(t, "validate-krew-manifest"), tool(t, "kubectl-krew"), tool(t, "kubectl")
	manifest, archive := release(t)

	t.Run("krew's validator accepts the manifest", func(t *testing.T) {
		out, code := run(t, nil, validator, "-manifest", manifest, "-skip-install")
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "structural validation OK")
	})
	t.Run("krew's validator rejects a manifest without a short description", func(t *testing.T) {
		data, err := os.ReadFile(manifest)
		require.NoError(t, err)
		broken := filepath.Join(t.TempDir(), "mandate.yaml")
		require.NoError(t, os.WriteFile(broken, []byte(dropLine(string(data), "  shortDescription:")), 0o600))
		out, code := run(t, nil, validator, "-manifest", broken, "-skip-install")
		assert.NotEqual(t, 0, code, "a manifest krew does not accept passed: %s", out)
	})
	t.Run("krew refuses an archive whose sha256 is not the manifest's", func(t *testing.T) {
		data, err := os.ReadFile(manifest)
		require.NoError(t, err)
		wrong := filepath.Join(t.TempDir(), "mandate.yaml")
		require.NoError(t, os.WriteFile(wrong, []byte(replaceSHA(string(data), strings.Repeat("0", 64))), 0o600))
		out, code := run(t, []string{"KREW_ROOT=" + t.TempDir()}, krew, "install", "--manifest="+wrong, "--archive="+archive)
		assert.NotEqual(t, 0, code, "installed an archive against the wrong checksum: %s", out)
	})

	krewRoot := t.TempDir()
	out, code := run(t, []string{"KREW_ROOT=" + krewRoot}, krew, "install", "--manifest="+manifest, "--archive="+archive)
	require.Equal(t, 0, code, "kubectl krew install: %s", out)
	// kubectl finds plugins on PATH: krew's bin and the pinned kubectl.
	path := []string{"PATH=" + filepath.Join(krewRoot, "bin") + string(os.PathListSeparator) + filepath.Dir(kubectl) +
		string(os.PathListSeparator) + os.Getenv("PATH")}

	out, code = run(t, path, kubectl, "plugin", "list")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, filepath.Join(krewRoot, "bin", "kubectl-mandate"))
	out, code = run(t, path, kubectl, "mandate", "version")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, version, "the installed plugin is this build")

	ctrl.SetLogger(logr.Discard())
	env := envtest.Start(t)
	ctx := context.Background()
	for ns, tenant := range fixtures.Tenants() {
		require.NoError(t, env.Client.Create(ctx, fixtures.TenantNamespace(ns, tenant)))
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "distill", Namespace: "product",
		Labels: map[string]string{workload.LabelClass: "training"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "distill", Image: "distill", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}}}}}
	require.NoError(t, env.Client.Create(ctx, job))
	kubeconfig := env.WriteKubeconfig(t, "sre")

	out, code = run(t, append(path, "KUBECONFIG="+kubeconfig), kubectl, "mandate", "explain", "job/distill", "-n", "product")
	// No GPU node: it waits, and explain says so (1); 2 would be bad input.
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "Job product/distill (tenant product): BLOCKED")
	assert.Contains(t, out, "TOPOLOGY_NEVER_FITS", "the rule that holds it")
	t.Logf("kubectl mandate explain job/distill -n product:\n%s", out)
}

// dropLine removes the lines of s that start with prefix.
func dropLine(s, prefix string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// replaceSHA sets every sha256 of a manifest to sum.
func replaceSHA(s, sum string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if k, _, ok := strings.Cut(l, "sha256:"); ok {
			lines[i] = k + "sha256: " + sum
		}
	}
	return strings.Join(lines, "\n")
}
