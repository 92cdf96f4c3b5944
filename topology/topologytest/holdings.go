package topologytest

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/topology"
)

// The holdings table: one pod per way a pod holds GPUs, bound to
// HoldingNode, with the DRA claims it references and what every consumer
// (the ledger, the topology model, audit, explain, the cluster report)
// must count of it. Each consumer's test runs the whole table, so a way
// one of them misses fails there.
const (
	// HoldingNamespace is the namespace of the table's pods and claims.
	HoldingNamespace = "team"
	// HoldingNode is the node they are bound to, HoldingProduct its GPU
	// product.
	HoldingNode    = "n1"
	HoldingProduct = "NVIDIA-H100-80GB-HBM3"
	// HoldingDeviceClass is the DRA DeviceClass HoldingCounting counts as
	// nvidia.com/gpu.
	HoldingDeviceClass = "gpu.nvidia.com"
	// HoldingDeviceMiB is the device memory of an nvidia.com/gpu.
	HoldingDeviceMiB = 80000
)

// HoldingCase is one pod of the holdings table.
type HoldingCase struct {
	Name string
	Pod  *corev1.Pod
	// Claims are the DRA claims the pod references.
	Claims []*resourcev1.ResourceClaim
	// Want is what topology.PodUsage counts of it, by quota key.
	Want map[string]int
	// WantWhole is Want in whole GPUs per resource (topology.Fold): what
	// the pod occupies of its node and uses of its tenant's quota.
	WantWhole map[string]int
}

// HoldingCounting is the counting the table is written for: one
// DeviceClass and the nvidia.com/gpu device memory. A model holding the
// same is HoldingModelFragment.
func HoldingCounting() topology.Counting {
	return topology.Counting{
		GPUMemory: topology.GPUMemory{topology.DefaultGPUResource: {Default: HoldingDeviceMiB}},
		DeviceResource: func(class string) (string, bool) {
			if class == HoldingDeviceClass {
				return topology.DefaultGPUResource, true
			}
			return "", false
		},
	}
}

// HoldingAllocatable is how many of each resource the table's pods hold
// HoldingNodeObject offers: enough for the whole table at once.
const HoldingAllocatable = 16

// HoldingNodeObject is HoldingNode: Ready, of HoldingProduct, named by
// its kubernetes.io/hostname label, offering HoldingAllocatable of each
// resource the table's pods hold.
func HoldingNodeObject() *corev1.Node {
	n := resource.NewQuantity(HoldingAllocatable, resource.DecimalSI)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: HoldingNode, Labels: map[string]string{
			"kubernetes.io/hostname": HoldingNode, topology.DefaultProductLabel: HoldingProduct,
		}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": *n, "nvidia.com/gpu.shared": *n, "nvidia.com/mig-1g.10gb": *n},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// HoldingCases is the holdings table, anew on each call.
func HoldingCases() []HoldingCase {
	gpu := topology.DefaultGPUResource
	return []HoldingCase{
		{
			Name: "extended resource", Pod: holdingPod("whole", limits(gpu, 2)),
			Want: map[string]int{gpu: 2}, WantWhole: map[string]int{gpu: 2},
		},
		{
			Name: "time-sliced replicas", Pod: holdingPod("timesliced", limits("nvidia.com/gpu.shared", 3)),
			Want: map[string]int{"nvidia.com/gpu.shared": 3}, WantWhole: map[string]int{"nvidia.com/gpu.shared": 3},
		},
		{
			Name: "MIG slices", Pod: holdingPod("mig", limits("nvidia.com/mig-1g.10gb", 2)),
			Want: map[string]int{"nvidia.com/mig-1g.10gb": 2}, WantWhole: map[string]int{"nvidia.com/mig-1g.10gb": 2},
		},
		{
			Name: "KAI fraction", Pod: holdingPod("fraction", nil, annotate(topology.AnnotationGPUFraction, "0.5")),
			Want: map[string]int{topology.SharedKey(gpu): 500}, WantWhole: map[string]int{gpu: 1},
		},
		{
			Name: "KAI GPU memory", Pod: holdingPod("memory", nil, annotate(topology.AnnotationGPUMemory, "20000")),
			Want: map[string]int{topology.SharedKey(gpu): 250}, WantWhole: map[string]int{gpu: 1},
		},
		{
			Name: "DRA claim allocated on the node", Pod: holdingPod("dra", nil, HoldsClaim("dra-gpus")),
			Claims: []*resourcev1.ResourceClaim{AllocatedClaim("dra-gpus", 4, HoldingNode)},
			Want:   map[string]int{gpu: 4}, WantWhole: map[string]int{gpu: 4},
		},
		{
			Name: "DRA claim allocated without a node selector", Pod: holdingPod("dra-network", nil, HoldsClaim("dra-network")),
			Claims: []*resourcev1.ResourceClaim{AllocatedClaim("dra-network", 2, "")},
			Want:   map[string]int{gpu: 2}, WantWhole: map[string]int{gpu: 2},
		},
	}
}

// AllocatedClaim is a claim in HoldingNamespace of n HoldingDeviceClass
// devices, allocated (on node, "" for devices that are not node-local).
func AllocatedClaim(name string, n int, node string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: HoldingNamespace, Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: HoldingDeviceClass, Count: int64(n)},
		}}}},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}},
	}
	for i := range n {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourcev1.DeviceRequestAllocationResult{
			Request: "gpus", Driver: HoldingDeviceClass, Pool: "pool", Device: "gpu-" + strconv.Itoa(i),
		})
	}
	if node != "" {
		c.Status.Allocation.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}
	}
	return c
}

// HoldsClaim makes the pod reference the claim of name.
func HoldsClaim(name string) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: &name})
	}
}

func annotate(k, v string) PodOption {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func limits(res string, n int64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceName(res): *resource.NewQuantity(n, resource.DecimalSI)}
}

// holdingPod is a running pod of the table bound to HoldingNode whose one
// container is limited to lim.
func holdingPod(name string, lim corev1.ResourceList, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: HoldingNamespace, Name: name},
		Spec: corev1.PodSpec{NodeName: HoldingNode, Containers: []corev1.Container{{Name: "c", Image: "registry.example/x:1",
			Resources: corev1.ResourceRequirements{Limits: lim}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// SharedClaimPods are two running pods on HoldingNode that reference one
// claim of 2 devices (shared-gpus): together they hold 2 GPUs, not 4.
func SharedClaimPods() ([]*corev1.Pod, *resourcev1.ResourceClaim) {
	return []*corev1.Pod{
		holdingPod("sharer-a", nil, HoldsClaim("shared-gpus")),
		holdingPod("sharer-b", nil, HoldsClaim("shared-gpus")),
	}, AllocatedClaim("shared-gpus", 2, HoldingNode)
}

// HoldingObjects are HoldingNodeObject, HoldingNamespace (labelled
// nsLabels) and objs (Pods and ResourceClaims) as a snapshot file or a
// listing holds them: what an inventory is made of.
func HoldingObjects(nsLabels map[string]string, objs ...runtime.Object) ([]*unstructured.Unstructured, error) {
	objs = append([]runtime.Object{HoldingNodeObject(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: HoldingNamespace, Labels: nsLabels}}}, objs...)
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("unable to convert %T: %w", o, err)
		}
		obj := &unstructured.Unstructured{Object: u}
		switch o.(type) {
		case *corev1.Node:
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		case *corev1.Namespace:
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		case *corev1.Pod:
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		case *resourcev1.ResourceClaim:
			obj.SetGroupVersionKind(resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"))
		default:
			return nil, fmt.Errorf("the holdings table has no %T", o)
		}
		out = append(out, obj)
	}
	return out, nil
}

// CaseObjects are tc's pod and claims.
func (tc HoldingCase) CaseObjects() []runtime.Object {
	out := []runtime.Object{tc.Pod}
	for _, c := range tc.Claims {
		out = append(out, c)
	}
	return out
}
