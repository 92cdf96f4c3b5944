package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

// TestGPUProductsAreCountedAgainstSeparateQuotas: tenant product
// guarantees 24 nvidia.com/gpu, 8 of them H100 and 8 B200. Through the real
// API server, an inference Job on H100 and one on B200 each stay within
// their product's guarantee and run non-preemptible; a second H100 Job is
// beyond H100's guarantee, though within the resource's, and runs
// preemptible. A pod that names no product is held to the resource's
// quota only, and once bound to a B200 node counts against B200: the next
// B200 Job is beyond B200's guarantee.
func TestGPUProductsAreCountedAgainstSeparateQuotas(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		const gpu = "nvidia.com/gpu"
		policies := fixtures.PolicyDir(t, func(model map[string]any) {
			quota := model["tenants"].(map[string]any)["product"].(map[string]any)["quota"].(map[string]any)
			quota[gpu] = map[string]any{"guaranteed": 24, "ceiling": 48, "products": map[string]any{
				topologytest.ProductH100: map[string]any{"guaranteed": 8, "ceiling": 32},
				topologytest.ProductB200: map[string]any{"guaranteed": 8, "ceiling": 16},
			}}
		})
		so.config = func(c *config.Serve) {
			// Jobs without a job controller never get pods: their
			// reservations must hold for the whole test.
			c.Quota.ConfirmationWindow = 10 * time.Minute
			c.Policies = policies
		}
		s := startWith(t, so)
		s.populate(t)
		ctx := context.Background()
		for i := range 2 {
			node := fixtures.H100Node(fmt.Sprintf("b200-b5-%d", i), "b5", "b5-c0")
			node.Labels[topologytest.LabelProduct] = topologytest.ProductB200
			if err := fixtures.CreateNode(ctx, s.env.Client, node); err != nil {
				t.Fatal(err)
			}
		}
		envtest.WaitFor(t, 20*time.Second, "every replica's cluster state to see the B200 nodes", func() bool {
			for _, r := range s.replicas {
				fit, err := r.State.Snapshot().Place(topology.Request{Pods: 2, GPUsPerPod: 8, Resource: gpu, Product: topologytest.ProductB200, RequiredLevel: "block"})
				if err != nil || !fit.FitsNow {
					return false
				}
			}
			return true
		})

		preemptible := func(job *batchv1.Job) string { return job.Spec.Template.Labels[workload.LabelPreemptible] }
		h100 := s.createInferenceJob(t, "serve-h100", topologytest.ProductH100)
		b200 := s.createInferenceJob(t, "tune-b200", topologytest.ProductB200)
		if preemptible(h100) != "false" || preemptible(b200) != "false" {
			t.Fatalf("H100 and B200 Jobs within their products' guarantees: mandate.dev/preemptible %q and %q, want false and false",
				preemptible(h100), preemptible(b200))
		}
		more := s.createInferenceJob(t, "serve-h100-more", topologytest.ProductH100)
		if preemptible(more) != "true" {
			t.Fatalf("a second H100 Job beyond H100's guarantee of 8 (the resource's 24 has room): mandate.dev/preemptible %q, want true", preemptible(more))
		}
		want := map[string]ledger.Usage{
			gpu: {Total: 24, NonPreemptible: 16},
			topology.ProductKey(gpu, topologytest.ProductH100): {Total: 16, NonPreemptible: 8},
			topology.ProductKey(gpu, topologytest.ProductB200): {Total: 8, NonPreemptible: 8},
		}
		for key, u := range want {
			// Held by the stored Jobs, on every replica's informers.
			s.waitUsage(t, "tenant product's GPUs of "+key, "product", func(got map[string]map[string]ledger.Usage) int { return got["product"][key].Total }, u.Total)
			s.waitUsage(t, "tenant product's non-preemptible GPUs of "+key, "product", func(got map[string]map[string]ledger.Usage) int { return got["product"][key].NonPreemptible }, u.NonPreemptible)
		}

		// No product named: the resource's guarantee (16 of 24 used) decides.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "serve-anywhere", Namespace: "product"},
			Spec: corev1.PodSpec{
				NodeName:          "b200-b5-1",
				PriorityClassName: "inference",
				Containers: []corev1.Container{{Name: "serve", Image: "registry.example/serve:1",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{gpu: resource.MustParse("8")}}}},
			},
		}
		if err := s.env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if got := pod.Labels[workload.LabelPreemptible]; got != "false" {
			t.Fatalf("a pod of no product within the resource's guarantee: mandate.dev/preemptible %q, want false", got)
		}
		// The bound pod counts against its node's product.
		s.waitUsage(t, "tenant product's non-preemptible B200 GPUs with the bound pod", "product", func(got map[string]map[string]ledger.Usage) int {
			return got["product"][topology.ProductKey(gpu, topologytest.ProductB200)].NonPreemptible
		}, 16)
		if job := s.createInferenceJob(t, "tune-b200-more", topologytest.ProductB200); preemptible(job) != "true" {
			t.Fatalf("a B200 Job after B200's guarantee was spent by a pod on a B200 node: mandate.dev/preemptible %q, want true", preemptible(job))
		}
	})
}

// createInferenceJob creates a one-pod inference Job of tenant product
// asking for 8 GPUs of a GPU product, and returns it as admitted.
func (s *suite) createInferenceJob(t *testing.T, name, product string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "product"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(int32(1)), Completions: ptr.To(int32(1)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				PriorityClassName: "inference",
				RestartPolicy:     corev1.RestartPolicyNever,
				NodeSelector:      map[string]string{workload.LabelProduct: product},
				Containers: []corev1.Container{{Name: "serve", Image: "registry.example/serve:1",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}},
			}}},
	}
	if err := s.env.Client.Create(context.Background(), job); err != nil {
		t.Fatalf("create Job %s: %v", name, err)
	}
	return job
}
