package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/workload"
)

// TestVolcanoPodGroupThroughTheWebhook: a Job of a Volcano tenant created
// through the API server is admitted by mandate serve, whose gang
// controller then makes its PodGroup (accepted by the upstream CRD schema),
// owned by the Job and garbage-collected with it.
func TestVolcanoPodGroupThroughTheWebhook(t *testing.T) {
	s := start(t)
	s.populate(t)
	envtest.StartGarbageCollector(t, s.env)
	ctx := context.Background()
	job := object(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: sweep, namespace: llm}
spec:
  parallelism: 4
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "8"}}
`)
	if err := s.env.Client.Create(ctx, job); err != nil {
		t.Fatalf("create job: %v", err)
	}
	w, err := workload.Normalize(job)
	if err != nil {
		t.Fatal(err)
	}
	pg := &unstructured.Unstructured{}
	pg.SetAPIVersion("scheduling.volcano.sh/v1beta1")
	pg.SetKind("PodGroup")
	key := client.ObjectKey{Namespace: "llm", Name: scheduler.PodGroupName(w)}
	envtest.WaitFor(t, 20*time.Second, "the PodGroup of the admitted Job", func() bool {
		return s.env.Client.Get(ctx, key, pg) == nil
	})
	minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	queue, _, _ := unstructured.NestedString(pg.Object, "spec", "queue")
	if minMember != 4 || queue != "research-llm" {
		t.Fatalf("PodGroup minMember %d queue %q, want 4 and research-llm", minMember, queue)
	}
	owners := pg.GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != "Job" || owners[0].UID != job.GetUID() {
		t.Fatalf("PodGroup owners %v, want the Job", owners)
	}
	if err := s.env.Client.Delete(ctx, job, client.PropagationPolicy("Background")); err != nil {
		t.Fatalf("delete job: %v", err)
	}
	envtest.WaitFor(t, 30*time.Second, "the PodGroup to be garbage-collected with its Job", func() bool {
		return apierrors.IsNotFound(s.env.Client.Get(ctx, key, pg))
	})
}
