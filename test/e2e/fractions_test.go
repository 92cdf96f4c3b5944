package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

// sharedJob is a Job of n KAI-shared pods in tenant product's namespace,
// sharing by the given annotation (gpu-fraction or gpu-memory), pinned to
// the H100 product when pinned.
func sharedJob(name string, n int, annotation, value string, pinned bool) string {
	selector := ""
	if pinned {
		selector = fmt.Sprintf("\n      nodeSelector: {%s: %s}", workload.LabelProduct, topologytest.ProductH100)
	}
	return fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: %s, namespace: product}
spec:
  parallelism: %d
  completions: %d
  template:
    metadata: {annotations: {%s: %q}}
    spec:
      restartPolicy: Never
      priorityClassName: build%s
      containers: [{name: main, image: ubuntu}]
`, name, n, n, annotation, value, selector)
}

// TestFractionalGPUsShareDevices: on a real API server, with one node of 8
// H100s left in the fit (the others cordoned) and a model that gives the
// H100's memory (gpuMemoryMiB):
//   - the node's running KAI-shared pods occupy ceil(their milli-GPUs/1000)
//     of its devices, not one each: 3 whole GPUs and 3 quarter pods leave 4
//     free, then 2 more quarter pods leave 3, and 4 pinned gpu-memory pods
//     of 20 GiB (a quarter of 80 GiB each) leave 2;
//   - a gang of 16 quarter pods packs onto the node's 4 free GPUs and is
//     admitted without a topology warning, where 17 wait;
//   - a gang of 16 gpu-memory pods of 20 GiB counts 4 GPUs when it names
//     the H100, and 16 whole devices with GPU_MEMORY_UNMAPPED when it names
//     no product, which the model does not map.
func TestFractionalGPUsShareDevices(t *testing.T) {
	ctx := context.Background()
	dir := fixtures.PolicyDir(t, func(model map[string]any) {
		model["gpuMemoryMiB"] = map[string]any{"nvidia.com/gpu": map[string]any{
			"products": map[string]any{topologytest.ProductH100: 81920},
		}}
	})
	b, err := bundles.Build(ctx, dir, bundles.BuildOptions{Revision: "fractions"})
	if err != nil {
		t.Fatal(err)
	}
	bundlePath := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := bundles.WriteFile(bundlePath, b); err != nil {
		t.Fatal(err)
	}
	s := startWith(t, startOptions{config: func(c *config.Serve) { c.Bundle.Source = bundlePath }})
	s.populate(t)
	c := s.env.Client

	// One node left in the fit: cordon the others.
	node := fixtures.GPUNode(0).Name
	for i := 1; i < 8; i++ {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: fixtures.GPUNode(i).Name}, n); err != nil {
			t.Fatal(err)
		}
		n.Spec.Unschedulable = true
		if err := c.Update(ctx, n); err != nil {
			t.Fatalf("cordon %s: %v", n.Name, err)
		}
	}
	bound := func(name string, annotations map[string]string, gpus int64, pinned bool) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "product", Annotations: annotations},
			Spec: corev1.PodSpec{NodeName: node, PriorityClassName: "build", RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "ubuntu"}}},
		}
		if gpus > 0 {
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
		}
		if pinned {
			pod.Spec.NodeSelector = map[string]string{workload.LabelProduct: topologytest.ProductH100}
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
	}
	quarter := map[string]string{workload.AnnotationGPUFraction: "0.25"}
	waitFree := func(free int) {
		t.Helper()
		envtest.WaitFor(t, 30*time.Second, fmt.Sprintf("the cluster model to count %d free GPUs on %s", free, node), func() bool {
			snap := s.srv.State.Snapshot()
			fits, err := snap.Place(topology.Request{Pods: free, GPUsPerPod: 1, RequiredLevel: "node"})
			if err != nil || !fits.FitsNow {
				return false
			}
			more, err := snap.Place(topology.Request{Pods: free + 1, GPUsPerPod: 1, RequiredLevel: "node"})
			return err == nil && !more.FitsNow && fits.ClusterFree == free
		})
	}
	decide := func(t *testing.T, manifest string) review.Result {
		t.Helper()
		res, err := s.srv.Service.Review(ctx, object(t, manifest), evaluator.Request{Operation: "CREATE", User: "admin", DryRun: true})
		if err != nil {
			t.Fatalf("Review: %v", err)
		}
		return res
	}
	// warning is the decision's first warning containing text, "" for none.
	warning := func(res review.Result, text string) string {
		for _, w := range res.Decision.Warnings {
			if strings.Contains(w, text) {
				return w
			}
		}
		return ""
	}
	const waits = "does not fit right now"

	bound("whole", nil, 3, false)
	for i := range 3 {
		bound(fmt.Sprintf("quarter-%d", i), quarter, 0, false)
	}
	waitFree(4) // 3 whole + ceil(750/1000)

	t.Run("16 quarter pods pack onto 4 free GPUs; 17 wait", func(t *testing.T) {
		res := decide(t, sharedJob("quarters", 16, workload.AnnotationGPUFraction, "0.25", false))
		if !res.Decision.Allowed || res.Workload.TotalGPUs != 4 || res.Workload.GPUShareMilli != 250 {
			t.Fatalf("16 × 0.25: allowed %v (violations %v), %d GPUs at %d milli, want admitted, 4 GPUs at 250",
				res.Decision.Allowed, res.Decision.Violations, res.Workload.TotalGPUs, res.Workload.GPUShareMilli)
		}
		if w := warning(res, waits); w != "" {
			t.Fatalf("16 quarter pods fit the node's 4 free GPUs, yet: %s", w)
		}
		s.create(t, sharedJob("quarters", 16, workload.AnnotationGPUFraction, "0.25", false)) // and the webhook admits it
		res = decide(t, sharedJob("quarters-17", 17, workload.AnnotationGPUFraction, "0.25", false))
		if w := warning(res, waits); !strings.Contains(w, "has 16 of the 17 pod slots it needs free") {
			t.Fatalf("17 quarter pods: want a waiting warning naming 16 of 17 pod slots, got %q (warnings %v)", w, res.Decision.Warnings)
		}
	})

	t.Run("running shared pods occupy packed devices", func(t *testing.T) {
		bound("quarter-3", quarter, 0, false)
		bound("quarter-4", quarter, 0, false)
		waitFree(3) // 3 whole + ceil(1250/1000), where a device each would leave none
		res := decide(t, sharedJob("quarters-again", 16, workload.AnnotationGPUFraction, "0.25", false))
		if w := warning(res, waits); !strings.Contains(w, "has 12 of the 16 pod slots it needs free") {
			t.Fatalf("16 quarter pods on 3 free GPUs: want a waiting warning naming 12 of 16 pod slots, got %q", w)
		}
		for i := range 4 {
			bound(fmt.Sprintf("memory-%d", i), map[string]string{workload.AnnotationGPUMemory: "20480"}, 0, true)
		}
		waitFree(2) // 3 whole + ceil((1250 + 4 × 250)/1000)
	})

	t.Run("gpu-memory counts its share where the model maps it, and says so where not", func(t *testing.T) {
		res := decide(t, sharedJob("memory", 16, workload.AnnotationGPUMemory, "20480", true))
		if res.Workload.TotalGPUs != 4 || res.Workload.TotalMilliGPUs != 4000 || res.Workload.GPUShareMilli != 250 {
			t.Fatalf("16 × 20 GiB of an 80 GiB H100: %d GPUs (%d milli) at %d milli each, want 4 (4000) at 250",
				res.Workload.TotalGPUs, res.Workload.TotalMilliGPUs, res.Workload.GPUShareMilli)
		}
		if w := warning(res, review.CodeGPUMemoryUnmapped+":"); w != "" {
			t.Fatalf("a mapped product warns: %s", w)
		}
		res = decide(t, sharedJob("memory-any", 16, workload.AnnotationGPUMemory, "20480", false))
		if res.Workload.TotalGPUs != 16 || res.Workload.GPUShareMilli != 0 {
			t.Fatalf("unmapped: %d GPUs at %d milli, want 16 whole devices", res.Workload.TotalGPUs, res.Workload.GPUShareMilli)
		}
		if w := warning(res, review.CodeGPUMemoryUnmapped+":"); !strings.Contains(w, "counts as 1 whole device") {
			t.Fatalf("unmapped gpu-memory: want a %s warning, got %v", review.CodeGPUMemoryUnmapped, res.Decision.Warnings)
		}
	})
}
