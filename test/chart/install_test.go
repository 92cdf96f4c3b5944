package chart

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/openreports"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

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
	// The background audit every two seconds, so that its Report follows
	// within the test's patience.
	objs := render(t, release, namespace, "--include-crds", "--set", "policies.source=configMap", "--values", values,
		"--set", "openReports.interval=2s")
	bin := buildMandate(t)
	env := envtest.Start(t, envtest.WithCertManagerCRDs(), envtest.WithPyTorchJobCRD(), envtest.WithAuditLog(), envtest.WithWebhookClientCert(),
		envtest.WithOpenReportsCRDs())
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

		// The elected replica's background audit, with the chart's RBAC,
		// publishes it where Policy Reporter and the like read.
		var rep unstructured.Unstructured
		rep.SetGroupVersionKind(schema.GroupVersionKind{Group: "openreports.io", Version: "v1alpha1", Kind: "Report"})
		var found map[string]any
		envtest.WaitFor(t, 60*time.Second, "the OpenReports Report of vision to hold detr-urgent's violation", func() bool {
			if err := c.Get(ctx, client.ObjectKey{Namespace: "vision", Name: openreports.ReportName}, &rep); err != nil {
				require.True(t, apierrors.IsNotFound(err), "get the Report: %v", err)
				return false
			}
			results, _, _ := unstructured.NestedSlice(rep.Object, "results")
			for _, r := range results {
				m := r.(map[string]any)
				subjects, _, _ := unstructured.NestedSlice(m, "resources")
				if m["rule"] == "PRIORITY_NOT_ALLOWED" && len(subjects) == 1 && subjects[0].(map[string]any)["name"] == "detr-urgent" {
					found = m
					return true
				}
			}
			return false
		})
		assert.Equal(t, "priority", found["category"], "the dimension")
		assert.Equal(t, "low", found["severity"], "dryrun: the stage of every violation of a first install")
		assert.Equal(t, "fail", found["result"])
	})

	t.Run("only the API server may call the webhooks", func(t *testing.T) {
		// The pods above reached serve through the API server, which
		// presents its client certificate. A review POSTed straight to
		// the replica is refused at the handshake, before it is read:
		// without a certificate, and with one another CA signed for the
		// API server's name. No decision is logged and no ledger moves.
		ledgers := func() map[string]string {
			var l unstructured.UnstructuredList
			l.SetGroupVersionKind(cluster.TenantLedgerGVK.GroupVersion().WithKind("TenantLedgerList"))
			require.NoError(t, c.List(ctx, &l))
			rv := map[string]string{}
			for _, o := range l.Items {
				rv[o.GetName()] = o.GetResourceVersion()
			}
			return rv
		}
		before := ledgers()
		require.NotEmpty(t, before, "the chart's shared ledger holds the decided pods")
		other, err := certs.NewCA("not-the-api-servers-ca", time.Now(), time.Hour)
		require.NoError(t, err)
		forged, err := certs.IssueClient(other, envtest.WebhookClientCN, time.Now(), time.Hour)
		require.NoError(t, err)
		for name, client := range map[string]*certs.KeyPair{"no certificate": nil, "another CA's certificate": forged} {
			err := postReview(serve, client, forgedGPUPod("platform", "forged-"+strings.ReplaceAll(name, " ", "-")))
			require.Error(t, err, "%s: a caller other than the API server is refused", name)
			assert.Contains(t, err.Error(), "tls", "%s: refused at the TLS handshake", name)
		}
		assert.False(t, serve.logged(func(line string) bool { return strings.Contains(line, `"forged-`) }),
			"no decision was made for a forged review")
		assert.Equal(t, before, ledgers(), "no hold changed")
	})

	t.Run("a create the API server rejects after /mutate frees its hold", func(t *testing.T) {
		// An invalid container name fails the API server's validation,
		// which runs after the mutating webhooks: Mandate reserved the
		// pod's GPU in the shared ledger, and a replica's GET must find
		// the pod never stored and release it.
		reserved := func(key string) bool {
			var l unstructured.UnstructuredList
			l.SetGroupVersionKind(cluster.TenantLedgerGVK.GroupVersion().WithKind("TenantLedgerList"))
			require.NoError(t, c.List(ctx, &l))
			for _, o := range l.Items {
				text, _, _ := unstructured.NestedString(o.Object, "spec", "reservations")
				for _, line := range strings.Split(text, "\n") {
					if strings.HasPrefix(line, key+" ") {
						return true
					}
				}
			}
			return false
		}
		// granted says whether a replica holds a grant of tenant (or an
		// ancestor) in the shared ledger.
		granted := func(tenant string) bool {
			var l unstructured.UnstructuredList
			l.SetGroupVersionKind(cluster.TenantLedgerGVK.GroupVersion().WithKind("TenantLedgerList"))
			require.NoError(t, c.List(ctx, &l))
			for _, o := range l.Items {
				text, _, _ := unstructured.NestedString(o.Object, "spec", "grants")
				for _, line := range strings.Split(text, "\n") {
					if f := strings.Fields(line); len(f) > 1 && f[1] == tenant {
						return true
					}
				}
			}
			return false
		}
		pod := podIn("platform", "rejected-install", "")
		pod.Spec.Containers[0].Name = "Bad_Name"
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		key := "/Pod/platform/rejected-install"
		rejected := time.Now()
		err := c.Create(ctx, pod)
		require.True(t, apierrors.IsInvalid(err), "the API server rejects the container name: %v", err)
		if !reserved(key) {
			// Spent from the replica's escrowed grant, with no write: the
			// grant stored in the TenantLedger covers it, and the replica
			// releases it locally (ledger.TestUnstoredEscrowGoesBackToTheGrant).
			require.True(t, granted("platform"), "Mandate reserved the pod's GPU before the API server rejected it: in the shared ledger, or from a grant stored there")
			t.Logf("the rejected create was admitted from %s's grant (no reservation written)", "platform")
			return
		}
		envtest.WaitFor(t, 30*time.Second, "the rejected create's reservation to leave the shared ledger", func() bool { return !reserved(key) })
		t.Logf("the rejected create's hold was released %s after the create returned", time.Since(rejected).Round(100*time.Millisecond))
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

	t.Run("200 concurrent reviews of the largest pods keep a replica under its memory limit", func(t *testing.T) {
		// 200 reviews of a pod of 10,000 containers (about 1 MiB each) at
		// once, straight to the replica with the API server's client
		// certificate: each is decided or refused with a clear status (429:
		// the bytes being decided are webhook.maxInFlightBytes; 500: the
		// evaluation's deadline), never allowed undecided; meanwhile
		// ordinary pods created through the API server are decided; and
		// serve's peak resident memory, with the chart's GOMEMLIMIT, stays
		// under the chart's memory limit. Dry runs: no quota is held.
		const reviews = 200
		cert, err := certs.IssueClient(env.WebhookClientCA, envtest.WebhookClientCN, time.Now(), time.Hour)
		require.NoError(t, err)
		pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		require.NoError(t, err)
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(serve.servingCA)
		hc := &http.Client{Timeout: envtest.Timeout(2 * time.Minute), Transport: &http.Transport{MaxConnsPerHost: reviews,
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}}}
		bodies := make([][]byte, reviews)
		for i := range bodies {
			bodies[i] = fixtures.LargePodReview(t, "platform", fmt.Sprintf("huge-%03d", i), true)
		}
		var mu sync.Mutex
		codes := map[int32]int{}
		var wg sync.WaitGroup
		burst := make(chan struct{})
		for i, body := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-burst
				resp, err := hc.Post(serve.webhook+"/mutate", "application/json", bytes.NewReader(body))
				if !assert.NoError(t, err, "review %d is answered", i) {
					return
				}
				defer resp.Body.Close()
				var out admissionv1.AdmissionReview
				if !assert.Equal(t, http.StatusOK, resp.StatusCode, "review %d", i) ||
					!assert.NoError(t, json.NewDecoder(resp.Body).Decode(&out), "review %d", i) || !assert.NotNil(t, out.Response, "review %d", i) {
					return
				}
				assert.Equal(t, types.UID(fmt.Sprintf("huge-%03d", i)), out.Response.UID)
				code := int32(http.StatusOK)
				if r := out.Response.Result; r != nil && r.Code != 0 {
					code = r.Code
				}
				switch {
				case out.Response.Allowed:
					// Decided: the dryrun install admits, with its patch.
					assert.Equal(t, int32(http.StatusOK), code, "review %d", i)
					assert.NotEmpty(t, out.Response.Patch, "review %d: allowed with the decision's patch", i)
				case code == http.StatusTooManyRequests:
					assert.Contains(t, out.Response.Result.Message, "webhook.maxInFlightBytes", "review %d", i)
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		close(burst)
		// Ordinary pods, created through the API server while the burst
		// lasts (it lasts at least the second a refused review waits).
		ordinary := 0
		for busy := true; busy; ordinary++ {
			select {
			case <-done:
				busy = false
			default:
			}
			p := podIn("platform", fmt.Sprintf("ordinary-%d", ordinary), "")
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
			// assert, not require: the burst's goroutines still report.
			if assert.NoError(t, c.Create(ctx, p, client.DryRunAll), "an ordinary pod during the burst") {
				assert.NotEmpty(t, p.Annotations["mandate.dev/policy-revision"], "decided: %v", p.Annotations)
			}
		}
		rss, peak, err := fixtures.ProcessMemory(serve.cmd.Process.Pid)
		require.NoError(t, err)
		t.Logf("%d concurrent reviews of a %d KiB pod (%d containers): answers by code %v; %d ordinary pods decided meanwhile; serve RSS %d MiB now, peak (VmHWM) %d MiB, limit %d MiB",
			reviews, len(bodies[0])>>10, fixtures.LargeContainers, codes, ordinary, rss>>20, peak>>20, fixtures.ChartMemoryLimit>>20)
		total := 0
		for _, n := range codes {
			total += n
		}
		assert.Equal(t, reviews, total, "every review is answered with an AdmissionReview")
		assert.Positive(t, codes[http.StatusOK], "some are decided")
		assert.Less(t, peak, int64(fixtures.ChartMemoryLimit), "serve's peak memory stays under the chart's limit")
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
	root := envtest.RepoRoot(t)
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
	data, err := os.ReadFile(filepath.Join(envtest.RepoRoot(t), "examples", "cluster.yaml"))
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

// forgedGPUPod is an AdmissionReview of a create of a one-GPU pod in ns, as
// the API server would send it.
func forgedGPUPod(ns, name string) []byte {
	pod := podIn(ns, name, "")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	raw, err := json.Marshal(pod)
	if err != nil {
		panic(err)
	}
	review, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(name), Operation: admissionv1.Create,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: ns, Name: name, Object: runtime.RawExtension{Raw: raw},
			UserInfo: authenticationv1.UserInfo{Username: "system:admin", Groups: []string{"system:masters"}}},
	})
	if err != nil {
		panic(err)
	}
	return review
}

// postReview POSTs an AdmissionReview to serve's /mutate straight, not
// through the API server, presenting client (none when nil).
func postReview(serve *serveProcess, client *certs.KeyPair, review []byte) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serve.servingCA)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if client != nil {
		pair, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
		if err != nil {
			return err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := hc.Post(serve.webhook+"/mutate", "application/json", bytes.NewReader(review))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return fmt.Errorf("answered %s", resp.Status)
}
