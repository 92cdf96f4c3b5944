package e2e

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

func TestWebhooks(t *testing.T) {
	began := time.Now()
	s := start(t)
	t.Logf("API server up and Mandate ready in %v", time.Since(began).Round(time.Millisecond))
	s.populate(t)
	ctx := context.Background()
	c := s.env.Client

	t.Run("health endpoints", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if got := s.probe(path); got != http.StatusOK {
				t.Errorf("GET %s = %d, want 200", path, got)
			}
		}
	})

	t.Run("the webhook server offers only AEAD cipher suites", func(t *testing.T) {
		wio := s.env.Environment.WebhookInstallOptions
		addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
		dial := func(c *tls.Config) error {
			conn, err := tls.Dial("tcp", addr, c)
			if err == nil {
				conn.Close()
			}
			return err
		}
		cbc := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, //nolint:gosec // probing the server's suites
			CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
				tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, tls.TLS_RSA_WITH_AES_128_GCM_SHA256}}
		if err := dial(cbc); err == nil {
			t.Error("a TLS 1.2 client offering only CBC and RSA key-exchange suites was served")
		}
		old := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11} //nolint:gosec // probing the server's versions
		if err := dial(old); err == nil {
			t.Error("a TLS 1.1 client was served")
		}
		aead := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, //nolint:gosec // probing the server's suites
			CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}
		if err := dial(aead); err != nil {
			t.Errorf("a TLS 1.2 AEAD client was refused: %v", err)
		}
	})

	t.Run("denied create is Forbidden with the policy's message", func(t *testing.T) {
		for _, tc := range []struct{ name, manifest string }{
			{"quota: Job over its tenant's ceiling", fixtures.PlatformTooBig},
			{"priority: PyTorchJob above its tenant's tiers", visionUrgent},
			{"topology: Volcano Job wider than any block", llmVolcanoTooWide},
			{"tenancy: Pod in a namespace without tenant", scratchPod},
		} {
			t.Run(tc.name, func(t *testing.T) {
				want := s.decide(t, tc.manifest)
				if want.Allowed || len(want.Violations) == 0 {
					t.Fatalf("fixture is not denied in-process: %+v", want)
				}
				err := c.Create(ctx, object(t, tc.manifest))
				if !apierrors.IsForbidden(err) {
					t.Fatalf("Create() error = %v, want Forbidden", err)
				}
				for _, v := range want.Violations {
					if !strings.Contains(err.Error(), v.Message) {
						t.Errorf("error %q lacks the violation %q", err, v.Message)
					}
				}
				if !strings.Contains(err.Error(), `admission webhook "`+webhook.MutatingWebhookName+`" denied the request`) {
					t.Errorf("error %q does not name Mandate's webhook", err)
				}
			})
		}
	})

	t.Run("admitted Job of a Volcano tenant is stored with Volcano directives", func(t *testing.T) {
		job := s.create(t, fixtures.VisionSweep)
		tmpl := "spec.template"
		expect(t, job, tmpl+".spec.schedulerName", "volcano")
		expect(t, job, tmpl+".metadata.annotations.scheduling\\.volcano\\.sh/queue-name", "research-vision")
		expect(t, job, tmpl+".metadata.annotations.scheduling\\.k8s\\.io/group-name", "mandate-job-vit-sweep")
		expect(t, job, tmpl+".spec.priorityClassName", "train")
		if _, ok := job.GetAnnotations()[scheduler.AnnotationDirectives]; !ok {
			t.Errorf("stored Job lacks %s", scheduler.AnnotationDirectives)
		}

		t.Run("its pods join its PodGroup without a new decision", func(t *testing.T) {
			// Without the Job's training class, decided on its own, this
			// pod would be an interactive one at priority build, above
			// research-vision's tiers: denied. As one of the Job's pods (the
			// Job's 4 GPUs per pod) it is not decided again.
			const lone = `
apiVersion: v1
kind: Pod
metadata:
  name: vit-sweep-0
  namespace: vision
spec:
  restartPolicy: Never
  containers:
  - {name: train, image: vit, resources: {limits: {nvidia.com/gpu: "4"}}}
`
			if d := s.decide(t, lone); d.Allowed {
				t.Fatalf("fixture: the pod alone must be denied: %+v", d)
			}
			pod := object(t, lone)
			pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.GetName(),
				UID: job.GetUID(), Controller: ptr.To(true)}})
			if err := c.Create(ctx, pod); err != nil {
				t.Fatalf("Create() error = %v", err)
			}
			expect(t, pod, "spec.schedulerName", "volcano")
			expect(t, pod, "metadata.annotations.scheduling\\.k8s\\.io/group-name", "mandate-job-vit-sweep")
			expect(t, pod, "metadata.annotations.scheduling\\.volcano\\.sh/queue-name", "research-vision")
		})
	})

	t.Run("admitted Job of a KAI tenant carries KAI keys", func(t *testing.T) {
		job := s.create(t, productDistill)
		expect(t, job, "metadata.labels.kai\\.scheduler/queue", "product")
		expect(t, job, "metadata.annotations.kai\\.scheduler/batch-min-member", "2")
		expect(t, job, "spec.template.spec.schedulerName", "kai-scheduler")
	})

	t.Run("Mandate's keys are immutable after admission", func(t *testing.T) {
		pod := s.create(t, strings.Replace(productPod, "embed-canary", "relabel-me", 1))
		expect(t, pod, "metadata.labels.kai\\.scheduler/preemptibility", "non-preemptible")
		usage := func() any { return s.srv.State.Usage("product")["product"]["nvidia.com/gpu"] }
		envtest.WaitFor(t, 30*time.Second, "the ledger to count the pod", func() bool {
			_, seen := s.srv.State.Usage("product")["product"]
			return seen
		})
		before := usage()
		patch := func(labels string) error {
			return c.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{`+labels+`}}}`)))
		}
		err := patch(`"kai.scheduler/preemptibility":"preemptible","mandate.dev/preemptible":"true"`)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("relabelling an admitted pod preemptible: error = %v, want Forbidden", err)
		}
		for _, want := range []string{"label kai.scheduler/preemptibility", "label mandate.dev/preemptible", "cannot be changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		asked := validatedUpdates(t)
		if err := patch(`"team":"search"`); err != nil {
			t.Errorf("an update of another label: %v", err)
		}
		if now := validatedUpdates(t); now != asked {
			t.Errorf("an update that changes none of Mandate's keys reached the webhook (%v updates validated, %v before): the matchCondition should keep it away", now, asked)
		}
		if after := usage(); !reflect.DeepEqual(before, after) {
			t.Errorf("the ledger changed from %v to %v", before, after)
		}
	})

	t.Run("every kind is decided and mutated", func(t *testing.T) {
		pod := s.create(t, productPod)
		expect(t, pod, "spec.schedulerName", "kai-scheduler")
		expect(t, pod, "spec.priorityClassName", "inference")

		pt := s.create(t, llmFinetune)
		expect(t, pt, "spec.pytorchReplicaSpecs.Worker.template.spec.schedulerName", "volcano")
		expect(t, pt, "spec.pytorchReplicaSpecs.Master.template.metadata.annotations.scheduling\\.volcano\\.sh/queue-name", "research-llm")

		vj := s.create(t, llmVolcanoJob)
		expect(t, vj, "spec.queue", "research-llm")
		expect(t, vj, "spec.schedulerName", "volcano")
	})

	t.Run("server-side dry run is answered and leaves nothing behind", func(t *testing.T) {
		obj := object(t, fixtures.VisionSweep)
		obj.SetName("vit-sweep-dry")
		if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
			t.Fatalf("dry-run Create() error = %v", err)
		}
		expect(t, obj, "spec.template.spec.schedulerName", "volcano")
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); !apierrors.IsNotFound(err) {
			t.Errorf("Get() after a dry run: error = %v, want NotFound", err)
		}
		if err := c.Create(ctx, object(t, fixtures.PlatformTooBig), client.DryRunAll); !apierrors.IsForbidden(err) {
			t.Errorf("dry run of a denied Job: error = %v, want Forbidden", err)
		}
	})

	t.Run("only admins change a namespace's tenant", func(t *testing.T) {
		const ns = "team-x"
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{workload.LabelTenant: "platform"}}}); err != nil {
			t.Fatal(err)
		}
		s.grantNamespaceEditing(t, "alice")
		relabel := func(groups []string, labels map[string]string) error {
			cfg := rest.CopyConfig(s.env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: append([]string{"system:authenticated"}, groups...)}
			alice, err := client.New(cfg, client.Options{Scheme: s.env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			got := &corev1.Namespace{}
			if err := alice.Get(ctx, client.ObjectKey{Name: ns}, got); err != nil {
				t.Fatal(err)
			}
			got.Labels = labels
			return alice.Update(ctx, got)
		}
		err := relabel(nil, map[string]string{workload.LabelTenant: "product"})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only members of system:masters or mandate-admins") {
			t.Errorf("non-admin changes the tenant: error = %v, want Forbidden naming the admin groups", err)
		}
		if err := relabel(nil, map[string]string{}); !apierrors.IsForbidden(err) {
			t.Errorf("non-admin removes the tenant: error = %v, want Forbidden", err)
		}
		if err := relabel(nil, map[string]string{workload.LabelTenant: "platform", "team": "x"}); err != nil {
			t.Errorf("non-admin edits another label: %v", err)
		}
		if err := relabel([]string{"mandate-admins"}, map[string]string{workload.LabelTenant: "product"}); err != nil {
			t.Errorf("mandate admin changes the tenant: %v", err)
		}
	})

	t.Run("Service-mode configurations pass the API server's validation", func(t *testing.T) {
		mutating, validating := webhook.Configurations(webhook.RegistrationOptions{
			Service:       &webhook.ServiceReference{Namespace: mandateNamespace, Name: "mandate-webhook", Port: 443},
			CABundle:      []byte("not checked on create"),
			Namespace:     mandateNamespace,
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		})
		mutating.Name, validating.Name = "mandate-service", "mandate-service"
		if err := c.Create(ctx, mutating, client.DryRunAll); err != nil {
			t.Errorf("mutating: %v", err)
		}
		if err := c.Create(ctx, validating, client.DryRunAll); err != nil {
			t.Errorf("validating: %v", err)
		}
	})
	t.Logf("suite took %v", time.Since(began).Round(time.Millisecond))
}

// decide returns what Mandate decides in-process for a manifest now.
// validatedUpdates counts the UPDATE reviews the validating webhook
// answered so far.
func validatedUpdates(t *testing.T) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != "mandate_admission_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["webhook"] == "validate" && labels["operation"] == "UPDATE" {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

func (s *suite) decide(t *testing.T, manifest string) evaluator.Decision {
	t.Helper()
	r := review.Service{Decider: s.srv.Evaluator, State: s.srv.State}
	review, err := r.Review(context.Background(), object(t, manifest), evaluator.Request{Operation: "CREATE", User: "admin"})
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	return review.Decision
}

// create creates a manifest, which must be admitted, and returns it as stored.
func (s *suite) create(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := object(t, manifest)
	if err := s.env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("Create(%s %s) error = %v", obj.GetKind(), obj.GetName(), err)
	}
	return obj
}

// grantNamespaceEditing lets user read and update namespaces (RBAC), so
// only Mandate can stop them.
func (s *suite) grantNamespaceEditing(t *testing.T, user string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "update", "patch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "namespace-editor-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := s.env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// expect asserts a string field of obj; path is dot-separated, with "\\."
// for a dot inside a key.
func expect(t *testing.T, obj *unstructured.Unstructured, path, want string) {
	t.Helper()
	fields := strings.Split(strings.ReplaceAll(path, "\\.", "\x00"), ".")
	for i := range fields {
		fields[i] = strings.ReplaceAll(fields[i], "\x00", ".")
	}
	got, found, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if err != nil || !found {
		t.Errorf("%s %s: %s not found (err %v)", obj.GetKind(), obj.GetName(), path, err)
		return
	}
	if s, ok := got.(string); !ok || s != want {
		t.Errorf("%s %s: %s = %v, want %q", obj.GetKind(), obj.GetName(), path, got, want)
	}
}
