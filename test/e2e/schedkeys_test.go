package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/scheduler"
)

// The manifests, in the style of KAI's and Volcano's own examples,
// submitted to tenants of the default model: product runs on KAI (queue
// product, train allowed), research-vision on Volcano.
const (
	kaiTrainPod = `
apiVersion: v1
kind: Pod
metadata:
  name: quarter
  namespace: product
  labels:
    priorityClassName: train
spec:
  containers:
  - name: main
    image: ubuntu
    resources: {limits: {nvidia.com/gpu: 1}}
`
	kaiElasticJob = `
apiVersion: batch/v1
kind: Job
metadata:
  name: elastic
  namespace: product
  annotations:
    kai.scheduler/batch-min-member: "2"
spec:
  parallelism: 6
  completions: 6
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: ubuntu
        resources: {limits: {nvidia.com/gpu: 1}}
`
	kaiQueuedJob = `
apiVersion: batch/v1
kind: Job
metadata:
  name: queued
  namespace: product
  labels:
    kai.scheduler/queue: root-eng-prod
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: ubuntu
        resources: {limits: {nvidia.com/gpu: 1}}
`
	volcanoJobInKAITenant = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vcjob
  namespace: product
spec:
  schedulerName: volcano
  minAvailable: 2
  queue: default
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: ubuntu
          resources: {limits: {nvidia.com/gpu: 1}}
`
)

// TestUsersSchedulerKeys: on a real API server, the scheduler keys a user
// sets are kept when the model allows them, overridden only with a
// warning naming the key and both values (a Volcano Job's queue the CRD
// defaulted is none), and a kind the tenant's scheduler cannot run is
// Forbidden with the reason.
func TestUsersSchedulerKeys(t *testing.T) {
	s := start(t)
	s.populate(t)
	ctx := context.Background()
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(s.env.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: s.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "product"}})); err != nil {
		t.Fatal(err)
	}
	create := func(t *testing.T, manifest string) map[string]string {
		t.Helper()
		warnings.reset()
		obj := object(t, manifest)
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("Create(%s) error = %v", obj.GetName(), err)
		}
		return obj.GetLabels()
	}

	t.Run("KAI priorityClassName label train is kept and preemptible", func(t *testing.T) {
		create(t, kaiTrainPod)
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "product", Name: "quarter"}, pod); err != nil {
			t.Fatal(err)
		}
		if got := pod.Labels[scheduler.LabelKAIPriorityClass]; got != "train" {
			t.Errorf("label %s = %q, want train", scheduler.LabelKAIPriorityClass, got)
		}
		if got := pod.Labels["kai.scheduler/preemptibility"]; got != "preemptible" {
			t.Errorf("label kai.scheduler/preemptibility = %q, want preemptible", got)
		}
		if pod.Spec.PriorityClassName != "train" || pod.Spec.Priority == nil || *pod.Spec.Priority != 50 {
			t.Errorf("pod runs at %q (%v), want train (50)", pod.Spec.PriorityClassName, pod.Spec.Priority)
		}
		if got := policyWarnings(warnings.get()); len(got) != 0 {
			t.Errorf("warnings %q, want none from the policy", got)
		}
	})

	t.Run("batch-min-member 2 of 6 stays 2", func(t *testing.T) {
		create(t, kaiElasticJob)
		job := object(t, kaiElasticJob)
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			t.Fatal(err)
		}
		if got := job.GetAnnotations()[scheduler.AnnotationKAIBatchMinMember]; got != "2" {
			t.Errorf("annotation %s = %q, want 2", scheduler.AnnotationKAIBatchMinMember, got)
		}
	})

	t.Run("an overridden queue is named with both values", func(t *testing.T) {
		labels := create(t, kaiQueuedJob)
		if got := labels[scheduler.LabelKAIQueue]; got != "product" {
			t.Errorf("label %s = %q, want product", scheduler.LabelKAIQueue, got)
		}
		want := `SCHEDULER_KEY_OVERRIDDEN: label kai.scheduler/queue asks for queue "root-eng-prod", but the authority model sets queue "product" for tenant product`
		if !containsString(warnings.get(), want) {
			t.Errorf("warnings %q lack %q", warnings.get(), want)
		}
	})

	t.Run("a Volcano Job naming no queue gets no override warning", func(t *testing.T) {
		// Volcano's CRD defaults spec.queue to "default" before the
		// webhook sees the Job: that is no request of the user's.
		create(t, llmVolcanoJob)
		job := object(t, llmVolcanoJob)
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(job.Object, "spec", "queue"); got != "research-llm" {
			t.Errorf("spec.queue = %q, want the tenant's research-llm", got)
		}
		for _, w := range warnings.get() {
			if strings.Contains(w, "SCHEDULER_KEY_OVERRIDDEN") {
				t.Errorf("warning %q for a Job that names no queue", w)
			}
		}
	})

	t.Run("a Volcano Job in a KAI tenant is Forbidden with the reason", func(t *testing.T) {
		err := c.Create(ctx, object(t, volcanoJobInKAITenant))
		if !apierrors.IsForbidden(err) {
			t.Fatalf("Create() error = %v, want Forbidden", err)
		}
		if !strings.Contains(err.Error(), "Volcano's own gang kind") || !strings.Contains(err.Error(), "scheduler is kai") {
			t.Errorf("error %q does not say why", err)
		}
	})
}
