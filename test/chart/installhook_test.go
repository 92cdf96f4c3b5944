package chart

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/envtest"
)

// hookAnnotation marks a Helm hook; helm install skips pre-delete hooks.
const hookAnnotation = "helm.sh/hook"

// runHook does what helm uninstall does with the pre-delete hook: it
// creates the hook's objects in weight order (the Job too, for the API
// server to validate it; nothing runs it here) and runs the Job's command,
// as the Job's ServiceAccount. It checks that the ServiceAccount may
// delete nothing else, and returns the Job.
func runHook(ctx context.Context, t *testing.T, env *envtest.Env, bin string, hooks []*unstructured.Unstructured) *batchv1.Job {
	t.Helper()
	weight := func(o *unstructured.Unstructured) int {
		w, _ := strconv.Atoi(o.GetAnnotations()["helm.sh/hook-weight"])
		return w
	}
	sort.SliceStable(hooks, func(i, j int) bool { return weight(hooks[i]) < weight(hooks[j]) })
	var job *batchv1.Job
	for _, o := range hooks {
		assert.Equal(t, "pre-delete", o.GetAnnotations()[hookAnnotation], key(o))
		assert.Contains(t, o.GetAnnotations()["helm.sh/hook-delete-policy"], "hook-succeeded", key(o))
		require.NoError(t, env.Client.Create(ctx, o.DeepCopy()), "create hook %s", key(o))
		if o.GetKind() == "Job" {
			job = typed[batchv1.Job](t, o)
		}
	}
	require.NotNil(t, job)

	kubeconfig := hookKubeconfig(t, env, job)
	hookSA := impersonating(t, env, "system:serviceaccount:"+namespace+":"+job.Spec.Template.Spec.ServiceAccountName)
	other := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"}}
	require.NoError(t, env.Client.Create(ctx, other))
	assert.True(t, apierrors.IsForbidden(hookSA.Delete(ctx, other)), "the hook may delete no other webhook configuration")
	require.NoError(t, env.Client.Delete(ctx, other))

	out, err := hookCommand(ctx, bin, job, kubeconfig).CombinedOutput()
	require.NoError(t, err, "the hook's command:\n%s", out)
	t.Logf("hook: %s", bytes.TrimSpace(out))
	return job
}

// hookCommand is the hook Job's container command: the image's entrypoint
// (the mandate binary) with the Job's arguments, reaching the API server
// through $KUBECONFIG instead of the pod's in-cluster configuration.
func hookCommand(ctx context.Context, bin string, job *batchv1.Job, kubeconfig string) *exec.Cmd {
	c := job.Spec.Template.Spec.Containers[0]
	args := append(append([]string{}, c.Command...), c.Args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	return cmd
}

func hookKubeconfig(t *testing.T, env *envtest.Env, job *batchv1.Job) string {
	t.Helper()
	return impersonatingKubeconfig(t, env, "system:serviceaccount:"+namespace+":"+job.Spec.Template.Spec.ServiceAccountName)
}

// impersonatingKubeconfig is an admin kubeconfig that acts as user: what
// it may do is what user's RBAC allows.
func impersonatingKubeconfig(t *testing.T, env *envtest.Env, user string) string {
	t.Helper()
	path := env.WriteKubeconfig(t, "admin")
	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// impersonating is a client acting as user.
func impersonating(t *testing.T, env *envtest.Env, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}
