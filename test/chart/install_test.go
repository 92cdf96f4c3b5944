package chart

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

// hookAnnotation marks a Helm hook; helm install skips pre-delete hooks.
const hookAnnotation = "helm.sh/hook"

// TestInstall is the safe first install, end to end: the chart rendered
// with its defaults and a model of one's own (the repository's model as
// policy files in values, the documented bring-your-own path), applied to
// a real API server that already runs the example cluster; mandate serve
// run with the rendered Deployment's arguments, as the chart's
// ServiceAccount, behind the rendered webhook configurations. Then:
//   - a pod of a namespace nobody labelled is admitted untouched (the API
//     server does not even call Mandate);
//   - a labelled tenant's pod is decided (directives, policy revision), and
//     one the model would deny is admitted in dryrun with the
//     dryrun-violations audit annotation;
//   - a non-admin cannot label a namespace with a tenant, nor remove it;
//   - the pre-delete hook's command, run as the hook's ServiceAccount,
//     deletes both webhook configurations (and only could), idempotently,
//     and with serve gone every create succeeds again.
func TestInstall(t *testing.T) {
	values := writeModelValues(t)
	objs := render(t, release, namespace, "--include-crds", "--set", "policies.source=configMap", "--values", values)
	bin := buildMandate(t)
	env := envtest.Start(t, envtest.WithCertManagerCRDs(), envtest.WithPyTorchJobCRD(), envtest.WithAuditLog())
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(5*time.Minute))
	defer cancel()
	c := env.Client

	t.Run("NOTES list the next steps", func(t *testing.T) {
		out, err := helmBare(t, "install", release, chartDir, "--namespace", namespace, "--dry-run",
			"--kubeconfig", env.WriteKubeconfig(t, "helm"), "--set", "policies.source=configMap", "--values", values)
		require.NoError(t, err, out)
		notes := out[strings.Index(out, "NOTES:"):]
		for _, want := range []string{
			"Policy: your model from ConfigMap " + fullname + "-policies",
			"Enforcement: DRYRUN. Nothing is denied",
			"kubectl label namespace NAMESPACE mandate.dev/tenant=TENANT",
			"mandate audit --policies DIR --kubeconfig FILE",
			`'"logger":"decision"'`,
			"mutate.mandate.dev/dryrun-violations",
			`--set enforcementOverride=""`,
			"pre-delete Job (mandate uninstall)",
		} {
			assert.Contains(t, notes, want)
		}
	})

	// The cluster runs before Mandate arrives, as a real one does.
	require.NoError(t, fixtures.CreatePriorityClasses(ctx, c))
	loadExampleCluster(ctx, t, c)

	// helm install: CRDs first, then everything but the hooks, the
	// webhook configurations last (registered once serve answers).
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	var hooks []*unstructured.Unstructured
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	sort.SliceStable(objs, func(i, j int) bool {
		return objs[i].GetKind() == "CustomResourceDefinition" && objs[j].GetKind() != "CustomResourceDefinition"
	})
	for _, o := range objs {
		switch {
		case o.GetAnnotations()[hookAnnotation] != "":
			hooks = append(hooks, o)
		case o.GetKind() == "MutatingWebhookConfiguration":
			mutating = typed[admissionregistrationv1.MutatingWebhookConfiguration](t, o)
		case o.GetKind() == "ValidatingWebhookConfiguration":
			validating = typed[admissionregistrationv1.ValidatingWebhookConfiguration](t, o)
		case o.GetKind() == "CustomResourceDefinition":
			// envtest installed the repository's CRDs already; helm
			// leaves an existing CRD alone too.
			if err := c.Create(ctx, o.DeepCopy()); !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err, "create %s", key(o))
			}
		default:
			require.NoError(t, c.Create(ctx, o.DeepCopy()), "create %s", key(o))
		}
	}
	require.NotNil(t, mutating)
	require.NotNil(t, validating)
	require.Len(t, hooks, 4, "the pre-delete hook: ServiceAccount, ClusterRole, ClusterRoleBinding, Job")

	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
	serve := startServe(ctx, t, env, bin, d, mutating, validating)

	t.Run("an unlabelled namespace is never governed", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}))
		prometheus := podIn("monitoring", "prometheus-0", "")
		require.NoError(t, c.Create(ctx, prometheus))
		// The example's scratch namespace has no tenant either: even a
		// GPU pod there (the demo's TENANT_MISSING) is left alone.
		scratch := podIn("scratch", "quick-test", "")
		scratch.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		require.NoError(t, c.Create(ctx, scratch))
		for _, p := range []*corev1.Pod{prometheus, scratch} {
			assert.Empty(t, mandateKeys(p.Labels), "%s/%s labels", p.Namespace, p.Name)
			assert.Empty(t, mandateKeys(p.Annotations), "%s/%s annotations", p.Namespace, p.Name)
			assert.Equal(t, corev1.DefaultSchedulerName, p.Spec.SchedulerName, "%s/%s scheduler", p.Namespace, p.Name)
			ev := auditedCreate(t, env, p.Namespace, "pods", p.Name)
			assert.Empty(t, mandateKeys(ev.Annotations), "the API server did not call Mandate for %s/%s", p.Namespace, p.Name)
		}
	})

	t.Run("a labelled tenant's pods are decided, in dryrun", func(t *testing.T) {
		notebook := podIn("platform", "notebook-install", "")
		notebook.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		require.NoError(t, c.Create(ctx, notebook))
		assert.NotEmpty(t, notebook.Annotations["mandate.dev/policy-revision"], "decided: %v", notebook.Annotations)
		assert.NotEqual(t, corev1.DefaultSchedulerName, notebook.Spec.SchedulerName, "the tenant's scheduler is injected")
		ev := auditedCreate(t, env, "platform", "pods", "notebook-install")
		assert.NotEmpty(t, ev.Annotations[webhook.MutatingWebhookName+"/"+webhook.AuditDecisionID])
		assert.Empty(t, ev.Annotations[webhook.MutatingWebhookName+"/"+webhook.AuditDryRunViolations], "nothing would have denied it")

		// Research vision may not ask for "build" (above its tiers): the
		// model denies it, the first install admits it and records why.
		urgent := podIn("vision", "detr-urgent", "build")
		urgent.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		require.NoError(t, c.Create(ctx, urgent), "dryrun: the would-be denial is admitted")
		assert.NotEmpty(t, urgent.Annotations["mandate.dev/policy-revision"], "decided: %v", urgent.Annotations)
		ev = auditedCreate(t, env, "vision", "pods", "detr-urgent")
		assert.Contains(t, ev.Annotations[webhook.MutatingWebhookName+"/"+webhook.AuditDryRunViolations], "PRIORITY_NOT_ALLOWED",
			"the audit event says what would have denied it: %v", ev.Annotations)
		assert.True(t, serve.logged(func(line string) bool {
			return strings.Contains(line, `"logger":"decision"`) && strings.Contains(line, `"detr-urgent"`) && strings.Contains(line, `"enforcement":"dryrun"`)
		}), "the decision log records the dryrun violation")
	})

	t.Run("a tenant label is guarded on every namespace", func(t *testing.T) {
		// A namespace editor who is not a Mandate admin.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "update", "patch"}}}}
		require.NoError(t, c.Create(ctx, role))
		require.NoError(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dev"}}}))
		dev := impersonating(t, env, "dev")
		relabel := func(ns string, edit func(map[string]string)) error {
			var n corev1.Namespace
			require.NoError(t, dev.Get(ctx, client.ObjectKey{Name: ns}, &n))
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			edit(n.Labels)
			return dev.Update(ctx, &n)
		}
		err := relabel("monitoring", func(l map[string]string) { l[workload.LabelTenant] = "platform" })
		require.Error(t, err, "an unlabelled namespace labelling itself into a tenant's quota")
		assert.Contains(t, err.Error(), webhook.NamespaceWebhookName)
		err = relabel("research", func(l map[string]string) { delete(l, workload.LabelTenant) })
		require.Error(t, err, "a tenant namespace leaving governance")
		assert.Contains(t, err.Error(), webhook.NamespaceWebhookName)
		assert.NoError(t, relabel("monitoring", func(l map[string]string) { l["team"] = "sre" }), "other labels are free")
	})

	t.Run("the pre-delete hook removes both webhook configurations", func(t *testing.T) {
		job := runHook(ctx, t, env, bin, hooks)
		var m admissionregistrationv1.MutatingWebhookConfigurationList
		var v admissionregistrationv1.ValidatingWebhookConfigurationList
		require.NoError(t, c.List(ctx, &m))
		require.NoError(t, c.List(ctx, &v))
		assert.Empty(t, m.Items, "no mutating webhook configuration is left")
		assert.Empty(t, v.Items, "no validating webhook configuration is left")

		// Idempotent: a second run (a retried Job) succeeds.
		out, err := hookCommand(ctx, bin, job, hookKubeconfig(t, env, job)).CombinedOutput()
		require.NoError(t, err, "the hook again, with nothing left to delete:\n%s", out)

		// With Mandate gone, nothing waits on it: a tenant's pod is created.
		serve.stop(t)
		envtest.WaitFor(t, 30*time.Second, "a tenant's pod to be created with serve stopped", func() bool {
			return c.Create(ctx, podIn("research", "after-uninstall", ""), client.DryRunAll) == nil
		})
	})
}

// writeModelValues writes the repository's model (its Rego and data.json,
// without tests) as policies.configMap.files, the bring-your-own path.
func writeModelValues(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	files := map[string]string{}
	base := filepath.Join(root, "policies")
	err := filepath.WalkDir(filepath.Join(base, "mandate"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.rego") || !(strings.HasSuffix(name, ".rego") || name == "data.json") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	require.NoError(t, err)
	require.Contains(t, files, "mandate/model/data.json")
	out, err := yaml.Marshal(map[string]any{"policies": map[string]any{"configMap": map[string]any{"files": files}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "model-values.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// loadExampleCluster creates examples/cluster.yaml: namespaces, then nodes
// (Ready, with their GPUs), then the running pods with their status.
func loadExampleCluster(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "cluster.yaml"))
	require.NoError(t, err)
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---") {
		obj := map[string]any{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		if len(obj) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
	order := map[string]int{"Namespace": 0, "Node": 1, "Pod": 2}
	sort.SliceStable(objs, func(i, j int) bool { return order[objs[i].GetKind()] < order[objs[j].GetKind()] })
	counts := map[string]int{}
	for _, o := range objs {
		counts[o.GetKind()]++
		if o.GetKind() == "Node" {
			node := &corev1.Node{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, node))
			require.NoError(t, fixtures.CreateNode(ctx, c, node))
			continue
		}
		status, hasStatus := o.Object["status"]
		created := o.DeepCopy()
		delete(created.Object, "status")
		require.NoError(t, c.Create(ctx, created), "create %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		if hasStatus && o.GetKind() == "Pod" {
			created.Object["status"] = status
			require.NoError(t, c.Status().Update(ctx, created))
		}
	}
	require.Positive(t, counts["Node"])
	require.Positive(t, counts["Pod"])
	t.Logf("example cluster: %v", counts)
}

// serveProcess is mandate serve running as a child process.
type serveProcess struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan error
	health string
}

// startServe runs the binary with the Deployment's arguments and
// environment, as the chart's ServiceAccount; only what a pod gets from
// its volumes and network differs: the serving certificate (envtest's,
// for 127.0.0.1), the policy files (the chart's ConfigMap, read back from
// the API server and written as the volume lays it out), the listen
// addresses. Then it registers the rendered webhook configurations,
// pointed at it, and waits until the API server calls them.
func startServe(ctx context.Context, t *testing.T, env *envtest.Env, bin string, d *appsv1.Deployment,
	mutating *admissionregistrationv1.MutatingWebhookConfiguration, validating *admissionregistrationv1.ValidatingWebhookConfiguration) *serveProcess {
	t.Helper()
	spec := d.Spec.Template.Spec
	container := spec.Containers[0]
	wio := &crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	require.NoError(t, wio.PrepWithoutInstalling())
	t.Cleanup(func() { _ = wio.Cleanup() })
	policies := mountConfigMap(ctx, t, env.Client, spec, "policies")

	health := freeAddr(t)
	replace := map[string]string{
		"--cert-dir":     wio.LocalServingCertDir,
		"--port":         strconv.Itoa(wio.LocalServingPort),
		"--health-addr":  health,
		"--metrics-addr": "0",
		"--policies":     policies,
	}
	args := []string{container.Args[0], "--host=" + wio.LocalServingHost,
		"--kubeconfig=" + impersonatingKubeconfig(t, env, "system:serviceaccount:"+namespace+":"+spec.ServiceAccountName)}
	for _, a := range container.Args[1:] {
		flag, _, _ := strings.Cut(a, "=")
		if v, ok := replace[flag]; ok {
			a = flag + "=" + v
		}
		args = append(args, a)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for _, e := range container.Env {
		switch {
		case e.Name == "POD_NAMESPACE":
			cmd.Env = append(cmd.Env, "POD_NAMESPACE="+namespace)
		case e.ValueFrom == nil:
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
	}
	s := &serveProcess{cmd: cmd, out: &syncBuffer{}, done: make(chan error, 1), health: health}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	require.NoError(t, cmd.Start())
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			t.Logf("mandate serve %s\n%s", strings.Join(args, " "), s.out.String())
		}
	})
	envtest.WaitFor(t, 60*time.Second, "mandate serve to be ready", func() bool {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("mandate serve exited: %v\n%s", err, s.out.String())
		default:
		}
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	url := func(cc *admissionregistrationv1.WebhookClientConfig) {
		require.NotNil(t, cc.Service, "the chart registers a Service")
		require.NotNil(t, cc.Service.Path)
		u := fmt.Sprintf("https://%s:%d%s", wio.LocalServingHost, wio.LocalServingPort, *cc.Service.Path)
		cc.Service, cc.URL, cc.CABundle = nil, &u, wio.LocalServingCAData
	}
	for i := range mutating.Webhooks {
		url(&mutating.Webhooks[i].ClientConfig)
	}
	for i := range validating.Webhooks {
		url(&validating.Webhooks[i].ClientConfig)
	}
	require.NoError(t, env.Client.Create(ctx, mutating))
	require.NoError(t, env.Client.Create(ctx, validating))
	// Stored is not yet in force: the API server reads configurations
	// through an informer. A dry run of a tenant's pod shows when it is.
	envtest.WaitFor(t, 30*time.Second, "the API server to call the webhooks", func() bool {
		p := podIn("platform", "probe", "")
		return env.Client.Create(ctx, p, client.DryRunAll) == nil && p.Annotations["mandate.dev/policy-revision"] != ""
	})
	return s
}

// logged says whether a line of serve's output satisfies match.
func (s *serveProcess) logged(match func(string) bool) bool {
	for _, line := range strings.Split(s.out.String(), "\n") {
		if match(line) {
			return true
		}
	}
	return false
}

// stop ends serve (SIGKILL: it is gone, as a deleted pod is) and waits.
func (s *serveProcess) stop(t *testing.T) {
	t.Helper()
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	err := <-s.done
	s.done <- err
}

// mountConfigMap writes the ConfigMap of the pod's volume name as the
// kubelet would mount it (its items at their paths) and returns the
// directory.
func mountConfigMap(ctx context.Context, t *testing.T, c client.Client, spec corev1.PodSpec, name string) string {
	t.Helper()
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			vol = &spec.Volumes[i]
		}
	}
	require.NotNil(t, vol, "volume %s", name)
	require.NotNil(t, vol.ConfigMap, "volume %s is a ConfigMap", name)
	var cm corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: vol.ConfigMap.Name}, &cm))
	dir := t.TempDir()
	items := vol.ConfigMap.Items
	if len(items) == 0 {
		for k := range cm.Data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		data, ok := cm.Data[it.Key]
		require.True(t, ok, "ConfigMap %s has no key %s", cm.Name, it.Key)
		path := filepath.Join(dir, filepath.FromSlash(it.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	}
	return dir
}

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

// auditedCreate waits for the audit event of the create of
// namespace/resource/name and returns it.
func auditedCreate(t *testing.T, env *envtest.Env, ns, resource, name string) envtest.AuditEvent {
	t.Helper()
	var found *envtest.AuditEvent
	envtest.WaitFor(t, 20*time.Second, "the audit event of "+ns+"/"+name, func() bool {
		events, err := env.AuditedCreates()
		require.NoError(t, err)
		for i, e := range events {
			if e.ObjectRef.Namespace == ns && e.ObjectRef.Resource == resource && e.ObjectRef.Name == name &&
				!strings.Contains(e.RequestURI, "dryRun") {
				found = &events[i]
			}
		}
		return found != nil
	})
	return *found
}

// podIn is a one-container pod of namespace/name, with priorityClass
// when not empty.
func podIn(ns, name, priorityClass string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{PriorityClassName: priorityClass, Containers: []corev1.Container{{
			Name: "main", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}},
	}
}

// mandateKeys are the keys of m that Mandate writes (mandate.dev/...).
func mandateKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		if strings.Contains(k, "mandate.dev/") {
			out = append(out, k)
		}
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// buildMandate builds the mandate binary (the image's entrypoint).
func buildMandate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mandate")
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(5*time.Minute))
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/mandate")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mandate: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
