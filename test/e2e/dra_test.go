package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
)

const (
	draObjects = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: product}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-pair, namespace: product}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.nvidia.com, count: 2}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: fast-nic, namespace: product}
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly: {deviceClassName: nic.example.com}
`
	draGang = `
apiVersion: batch/v1
kind: Job
metadata: {name: dra-gang, namespace: product}
spec:
  parallelism: 8
  completions: 8
  template:
    spec:
      restartPolicy: Never
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: one-gpu}
      containers:
      - name: main
        image: ubuntu
        resources: {claims: [{name: gpu}]}
`
	draShared = `
apiVersion: batch/v1
kind: Job
metadata: {name: dra-shared, namespace: product}
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      restartPolicy: Never
      resourceClaims:
      - {name: pair, resourceClaimName: shared-pair}
      - {name: nic, resourceClaimTemplateName: fast-nic}
      containers:
      - name: main
        image: ubuntu
        resources: {claims: [{name: pair}, {name: nic}]}
`
)

// TestDRAClaimsAreGPUDemand: on a real API server serving resource.k8s.io/v1,
// a gang of 8 pods with a one-GPU claim template each counts 8 GPUs and is
// placed; a shared claim counts once however many pods use it; a claim for
// a DeviceClass the model does not map is named in a warning.
func TestDRAClaimsAreGPUDemand(t *testing.T) {
	s := start(t)
	s.populate(t)
	ctx := context.Background()
	for _, doc := range strings.Split(draObjects, "\n---\n") {
		s.create(t, doc)
	}
	decide := func(t *testing.T, manifest string) review.Result {
		t.Helper()
		res, err := s.srv.Service.Review(ctx, object(t, manifest), evaluator.Request{Operation: "CREATE", User: "admin", DryRun: true})
		if err != nil {
			t.Fatalf("Review: %v", err)
		}
		return res
	}

	t.Run("8 pods × a 1-GPU claim template count 8 GPUs and are placed", func(t *testing.T) {
		res := decide(t, draGang)
		w := res.Workload
		if w.TotalGPUs != 8 || w.GPUsPerPod != 1 || w.GPUResource != "nvidia.com/gpu" {
			t.Fatalf("workload counts %d × %d %s, want 8 GPUs of nvidia.com/gpu, 1 per pod", w.TotalGPUs, w.GPUsPerPod, w.GPUResource)
		}
		if !res.Decision.Allowed || res.Decision.Directives.RequiredLevel == "" {
			t.Fatalf("not admitted with a placement: allowed %v, violations %v, required level %q",
				res.Decision.Allowed, res.Decision.Violations, res.Decision.Directives.RequiredLevel)
		}
		s.create(t, draGang) // and the webhook admits it
	})

	t.Run("a shared claim counts once; an unmapped DeviceClass is named", func(t *testing.T) {
		res := decide(t, draShared)
		if res.Workload.TotalGPUs != 2 {
			t.Errorf("4 pods sharing a 2-GPU claim count %d GPUs, want 2", res.Workload.TotalGPUs)
		}
		found := false
		for _, w := range res.Decision.Warnings {
			found = found || (strings.Contains(w, review.CodeDRAUnmapped) && strings.Contains(w, "nic.example.com") && strings.Contains(w, "fast-nic"))
		}
		if !found {
			t.Errorf("warnings %q do not name the unmapped DeviceClass nic.example.com", res.Decision.Warnings)
		}
	})
}

// TestRunningDRAPodsHoldTheGuarantee: on `mandate serve` with a short
// confirmation window, two running pods whose 8 GPUs each come from
// allocated ResourceClaims (no DRA driver runs: the test writes the
// allocations through the status subresource) fill platform's guarantee
// of 16 and keep it filled after their reservations' window has passed,
// so a third non-preemptible 8-GPU DRA pod is decided preemptible (over
// the guarantee, under the ceiling: the model's quotaPolicy.overGuarantee)
// or denied, never non-preemptible.
func TestRunningDRAPodsHoldTheGuarantee(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		const guarantee, ceiling = 16, 32
		policies := fixtures.PolicyDir(t, func(model map[string]any) {
			quota := model["tenants"].(map[string]any)["platform"].(map[string]any)["quota"].(map[string]any)
			quota["nvidia.com/gpu"] = map[string]any{"guaranteed": guarantee, "ceiling": ceiling}
		})
		so.config = func(c *config.Serve) {
			c.Quota.ConfirmationWindow = confirmationWindow
			c.Policies = policies
		}
		s := startWith(t, so)
		s.populate(t)
		ctx := context.Background()
		c := s.env.Client
		nonPreemptible := func(u map[string]map[string]ledger.Usage) int { return u["platform"]["nvidia.com/gpu"].NonPreemptible }
		claim := func(name string) *resourcev1.ResourceClaim {
			cl := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: name},
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
					Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 8}}}}}}
			if err := c.Create(ctx, cl); err != nil {
				t.Fatalf("create ResourceClaim %s: %v", name, err)
			}
			return cl
		}
		draPod := func(name, claimName string) (*corev1.Pod, error) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "platform"},
				Spec: corev1.PodSpec{PriorityClassName: "build",
					ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(claimName)}},
					Containers: []corev1.Container{{Name: "build", Image: "registry.example/build:1",
						Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}}}}}
			return pod, c.Create(ctx, pod)
		}

		for i, name := range []string{"dra-a", "dra-b"} {
			cl := claim(name)
			pod, err := draPod(name, name)
			if err != nil {
				t.Fatalf("create pod %s: %v", name, err)
			}
			if got := pod.Labels[ledger.LabelPreemptible]; got != "false" {
				t.Fatalf("pod %s (%d of the guarantee's %d GPUs) has mandate.dev/preemptible=%q, want false", name, 8*(i+1), guarantee, got)
			}
			// What a DRA driver and the scheduler would do: allocate the
			// claim's 8 devices on a node, and run the pod.
			cl.Status.Allocation = &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{fixtures.GPUNode(i).Name}}},
			}}}}
			for d := range 8 {
				cl.Status.Allocation.Devices.Results = append(cl.Status.Allocation.Devices.Results, resourcev1.DeviceRequestAllocationResult{
					Request: "gpus", Driver: "gpu.nvidia.com", Pool: "gpu-node-0", Device: fmt.Sprintf("gpu-%d", d)})
			}
			if err := c.Status().Update(ctx, cl); err != nil {
				t.Fatalf("allocate ResourceClaim %s: %v", name, err)
			}
			pod.Status.Phase = corev1.PodRunning
			if err := c.Status().Update(ctx, pod); err != nil {
				t.Fatalf("run pod %s: %v", name, err)
			}
		}
		// After the reservations' window, only the running pods' claims hold
		// the guarantee.
		time.Sleep(confirmationWindow + time.Second)
		s.waitUsage(t, "the running DRA pods' non-preemptible GPUs once the reservations expired", "platform", nonPreemptible, guarantee)

		// The allocated devices occupy their nodes, and a listing of the
		// cluster (what audit, explain and the report read) holds them too.
		free, err := s.srv.State.Snapshot().Place(topology.Request{Pods: 1, GPUsPerPod: 1, Resource: "nvidia.com/gpu"})
		if err != nil || free.ClusterFree != 64-guarantee {
			t.Errorf("the cluster model has %d of 64 GPUs free (%v), want %d: the allocated claims occupy their nodes", free.ClusterFree, err, 64-guarantee)
		}
		inv, err := inventory.List(ctx, c, "e2e")
		if err != nil {
			t.Fatal(err)
		}
		claims, err := inv.ClaimLookup()
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		if err := inv.EachPod(func(p *corev1.Pod) error {
			held += topology.PodUsage(p, "", s.srv.Evaluator.Model().Counting(), claims).GPUs["nvidia.com/gpu"]
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if held != guarantee {
			t.Errorf("the listed pods hold %d GPUs through their listed claims, want %d", held, guarantee)
		}

		claim("dra-c")
		pod, err := draPod("dra-c", "dra-c")
		switch {
		case apierrors.IsForbidden(err):
			t.Logf("the third 8-GPU DRA pod was denied: %v", err)
		case err != nil:
			t.Fatalf("create pod dra-c: %v", err)
		case pod.Labels[ledger.LabelPreemptible] != "true":
			t.Errorf("the third 8-GPU DRA pod, over platform's full guarantee of %d, has mandate.dev/preemptible=%q, want true",
				guarantee, pod.Labels[ledger.LabelPreemptible])
		}
		for i, r := range s.replicas {
			if got := nonPreemptible(r.State.Usage("platform")); got > guarantee {
				t.Errorf("replica %d: platform holds %d non-preemptible GPUs, over its guarantee of %d", i, got, guarantee)
			}
		}
	})
}

// TestServeWithoutDRA: an API server that serves no resource.k8s.io/v1
// (DRA turned off) runs serve all the same: the ResourceClaim informer is
// optional, and pods count their extended resources.
func TestServeWithoutDRA(t *testing.T) {
	s := startWith(t, startOptions{env: []envtest.Option{envtest.WithAPIServerArg("runtime-config", "resource.k8s.io/v1=false")}})
	s.populate(t)
	if _, err := s.env.Client.RESTMapper().RESTMapping(resourcev1.SchemeGroupVersion.WithKind("ResourceClaim").GroupKind(), "v1"); err == nil {
		t.Fatal("the API server serves resource.k8s.io/v1 ResourceClaims: the test needs one that does not")
	}
	pod := buildPod("no-dra")
	if err := s.env.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	envtest.WaitFor(t, 30*time.Second, "the pod to count", func() bool {
		return s.srv.State.Usage("platform")["platform"]["nvidia.com/gpu"].Total == 1
	})
}
