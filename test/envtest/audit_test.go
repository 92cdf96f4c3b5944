package envtest_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/test/envtest"
)

const (
	annotatingWebhook = "annotate.envtest.mandate.dev"
	auditKey          = "seen"
)

// annotatingWebhookOptions registers a mutating webhook for pod creates,
// served over TLS at 127.0.0.1:port/annotate.
func annotatingWebhookOptions(t *testing.T) crenvtest.WebhookInstallOptions {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return crenvtest.WebhookInstallOptions{
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{{
			ObjectMeta: metav1.ObjectMeta{Name: "envtest-annotate"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: annotatingWebhook,
				// envtest fills in the CA bundle of the certificate it
				// generates for 127.0.0.1.
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d/annotate", port))},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		}},
		LocalServingHost: "127.0.0.1",
		LocalServingPort: port,
	}
}

// serveAnnotatingWebhook admits every request with the audit annotation
// seen=<namespace>/<name>.
func serveAnnotatingWebhook(t *testing.T, env *envtest.Env) {
	t.Helper()
	wio := env.Environment.WebhookInstallOptions
	srv := crwebhook.NewServer(crwebhook.Options{Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir})
	srv.Register("/annotate", &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		resp := admission.Allowed("")
		resp.AuditAnnotations = map[string]string{auditKey: req.Namespace + "/" + req.Name}
		return resp
	})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook server: %v", err)
		}
	})
	started := srv.StartedChecker()
	deadline := time.Now().Add(envtest.Timeout(30 * time.Second))
	for started(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("webhook server not serving: %v", started(nil))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAuditLog creates one object of each governed kind, one dry run and
// one ConfigMap through a real API server with the audit log on, and reads
// back the completed creates: the governed kinds with their response codes,
// the webhook's audit annotation on the pod, the dry run's request URI, and
// no ConfigMap, which the policy does not log.
func TestAuditLog(t *testing.T) {
	env := envtest.Start(t, envtest.WithPyTorchJobCRD(), envtest.WithAuditLog(), envtest.WithWebhooks(annotatingWebhookOptions(t)))
	serveAnnotatingWebhook(t, env)
	if env.AuditLog == "" || !strings.HasSuffix(env.AuditLog, ".log") {
		t.Fatalf("Env.AuditLog = %q, want the log's path", env.AuditLog)
	}
	ctx := context.Background()
	c := env.Client
	container := []corev1.Container{{Name: "c", Image: "registry.example/x:1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{Containers: container}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: container}}}}
	template := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "registry.example/x:1"}}}}
	pytorchJob := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": map[string]any{"name": "pt", "namespace": "default"},
		"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{"replicas": int64(1), "template": template}}},
	}}
	volcanoJob := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": map[string]any{"name": "vj", "namespace": "default"},
		"spec": map[string]any{"tasks": []any{map[string]any{"name": "w", "replicas": int64(1), "template": template}}},
	}}
	for _, obj := range []client.Object{pod, job, pytorchJob, volcanoJob} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("Create(%s) error = %v", obj.GetName(), err)
		}
	}
	dryRun := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dry", Namespace: "default"}, Spec: corev1.PodSpec{Containers: container}}
	if err := c.Create(ctx, dryRun, client.DryRunAll); err != nil {
		t.Fatalf("Create(dry run) error = %v", err)
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}}); err != nil {
		t.Fatalf("Create(ConfigMap) error = %v", err)
	}

	want := map[string]string{ // group/resource/name → annotation
		"/pods/p":                     "default/p",
		"batch/jobs/j":                "",
		"kubeflow.org/pytorchjobs/pt": "",
		"batch.volcano.sh/jobs/vj":    "",
		"/pods/dry":                   "default/dry",
	}
	var got map[string]envtest.AuditEvent
	deadline := time.Now().Add(envtest.Timeout(10 * time.Second))
	for len(got) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("audited creates = %v after 10s, want %d", got, len(want))
		}
		time.Sleep(50 * time.Millisecond)
		events, err := env.AuditedCreates()
		if err != nil {
			t.Fatalf("AuditedCreates() error = %v", err)
		}
		got = map[string]envtest.AuditEvent{}
		for _, ev := range events {
			got[ev.ObjectRef.APIGroup+"/"+ev.ObjectRef.Resource+"/"+ev.ObjectRef.Name] = ev
		}
	}
	if len(got) != len(want) {
		t.Errorf("audited creates = %v, want only %v", got, want)
	}
	for k, annotation := range want {
		ev, ok := got[k]
		if !ok {
			t.Errorf("no audited create of %s", k)
			continue
		}
		if ev.Verb != "create" || ev.Stage != "ResponseComplete" || ev.ResponseStatus.Code != 201 || ev.ObjectRef.Namespace != "default" {
			t.Errorf("%s: event %+v, want a completed create in default answered 201", k, ev)
		}
		if g := ev.Annotations[annotatingWebhook+"/"+auditKey]; g != annotation {
			t.Errorf("%s: annotation %s/%s = %q, want %q (annotations %v)", k, annotatingWebhook, auditKey, g, annotation, ev.Annotations)
		}
		if dry := strings.Contains(ev.RequestURI, "dryRun=All"); dry != (k == "/pods/dry") {
			t.Errorf("%s: requestURI %q, dry run %v", k, ev.RequestURI, dry)
		}
	}
}

// TestAuditedCreatesNeedsTheLog: an Env started without WithAuditLog says
// how to get one.
func TestAuditedCreatesNeedsTheLog(t *testing.T) {
	env := &envtest.Env{}
	if _, err := env.AuditedCreates(); err == nil || !strings.Contains(err.Error(), "WithAuditLog") {
		t.Errorf("AuditedCreates() error = %v, want one naming WithAuditLog", err)
	}
}
