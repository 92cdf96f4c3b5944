package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// quarterPod is a KAI pod asking for a quarter of one GPU: no extended
// resource, the gpu-fraction annotation.
func quarterPod(namespace, name string) *corev1.Pod {
	pod := gpuPod(namespace, name, "build", 0, corev1.PodRunning, nil)
	pod.Annotations = map[string]string{workload.AnnotationGPUFraction: "0.25"}
	return pod
}

// TestFractionalPodsCountTheirFraction: 16 pods at gpu-fraction 0.25 use
// 4 GPUs, exactly; a 17th rounds the tenant's use up to 5.
func TestFractionalPodsCountTheirFraction(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	for i := range 16 {
		l.UpsertPod(quarterPod("p", fmt.Sprintf("q%d", i)))
	}
	require.Equal(t, map[string]Usage{"nvidia.com/gpu": {Total: 4, NonPreemptible: 4}}, l.Usage("product")["product"])
	require.Equal(t, map[string]Usage{"nvidia.com/gpu": {Total: 4, NonPreemptible: 4}}, l.Usage("product")["org"])
	l.UpsertPod(quarterPod("p", "q16"))
	require.Equal(t, 5, l.Usage("product")["product"]["nvidia.com/gpu"].Total)
	l.UpsertPod(gpuPod("p", "whole", "build", 2, corev1.PodRunning, nil))
	require.Equal(t, 7, l.Usage("product")["product"]["nvidia.com/gpu"].Total, "whole devices add to the shared ones")
}

// TestFractionalReservationShrinksAsPodsAppear: a 16-pod quarter-GPU
// gang reserves 4000 milli-GPUs, which its pods consume exactly: its use
// stays 4 GPUs while they appear.
func TestFractionalReservationShrinksAsPodsAppear(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	key := WorkloadKey("batch/v1", "Job", "p", "share")
	l.Reserve(key, "product", map[string]int{SharedKey("nvidia.com/gpu"): 4000}, false, time.Minute)
	require.Equal(t, 4, l.Usage("product")["product"]["nvidia.com/gpu"].Total)
	for i := range 16 {
		pod := quarterPod("p", fmt.Sprintf("share-%d", i))
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "share", Controller: ptr(true)}}
		l.UpsertPod(pod)
		require.Equal(t, 4, l.Usage("product")["product"]["nvidia.com/gpu"].Total, "after pod %d", i)
	}
	require.Equal(t, 0, l.Reservations())
	require.NotContains(t, l.Usage("product")["product"], SharedKey("nvidia.com/gpu"), "milli-GPUs are folded out of usage")
}

// memoryPod is a KAI pod asking for mib of one GPU's memory.
func memoryPod(namespace, name string, mib string) *corev1.Pod {
	pod := gpuPod(namespace, name, "build", 0, corev1.PodRunning, nil)
	pod.Annotations = map[string]string{workload.AnnotationGPUMemory: mib}
	return pod
}

// TestMemoryPodsCountTheirShare: with the model's device memory, 16 pods
// of 20 GiB on 80 GiB GPUs use 4 GPUs, as admission reserved them (a
// product's entry for a pod pinned to it); without it each uses a whole
// device; a new model with a mapping recounts the running pods.
func TestMemoryPodsCountTheirShare(t *testing.T) {
	mem := topology.GPUMemory{"nvidia.com/gpu": {Default: 81920, Products: map[string]int64{"NVIDIA-A100-SXM4-40GB": 40960}}}
	cfg := testConfig
	cfg.GPUMemory = mem
	l := New(cfg)
	l.UpsertNamespace(ns("p", "product"))
	for i := range 16 {
		l.UpsertPod(memoryPod("p", fmt.Sprintf("m%d", i), "20480"))
	}
	require.Equal(t, 4, l.Usage("product")["product"]["nvidia.com/gpu"].Total)
	a100 := memoryPod("p", "a100", "20480")
	a100.Spec.NodeSelector = map[string]string{workload.LabelProduct: "NVIDIA-A100-SXM4-40GB"}
	l.UpsertPod(a100)
	require.Equal(t, 5, l.Usage("product")["product"]["nvidia.com/gpu"].Total, "4000 + 500 milli")

	unmapped := New(testConfig)
	unmapped.UpsertNamespace(ns("p", "product"))
	for i := range 16 {
		unmapped.UpsertPod(memoryPod("p", fmt.Sprintf("m%d", i), "20480"))
	}
	require.Equal(t, 16, unmapped.Usage("product")["product"]["nvidia.com/gpu"].Total, "unmapped: a whole device each")
	unmapped.SetConfig(cfg)
	require.Equal(t, 4, unmapped.Usage("product")["product"]["nvidia.com/gpu"].Total, "a new model maps the running pods")
	unmapped.SetConfig(testConfig)
	require.Equal(t, 16, unmapped.Usage("product")["product"]["nvidia.com/gpu"].Total)
	unmapped.DeletePod("p", "m0")
	require.Equal(t, 15, unmapped.Usage("product")["product"]["nvidia.com/gpu"].Total)
}

// TestFractionsCountAgainstTheirProduct: shared GPUs of a product count
// against that product's quota as well as the resource's, whether the pod
// names the product or runs on a node of it, and so do their reservations
// (the eight half-H100 pods that left H100's guarantee of 4 empty
// for four whole H100 pods).
func TestFractionsCountAgainstTheirProduct(t *testing.T) {
	const h100 = "NVIDIA-H100-80GB-HBM3"
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	for i := range 8 {
		pod := gpuPod("p", fmt.Sprintf("half-%d", i), "build", 0, corev1.PodRunning, nil)
		pod.Annotations = map[string]string{workload.AnnotationGPUFraction: "0.5"}
		if i%2 == 0 {
			pod.Spec.NodeSelector = map[string]string{workload.LabelProduct: h100}
		} else {
			pod.Spec.NodeName = "h100-node"
		}
		l.UpsertPod(pod)
	}
	l.SetNodeProduct("h100-node", h100)
	usage := l.Usage("product")["product"]
	require.Equal(t, Usage{Total: 4, NonPreemptible: 4}, usage["nvidia.com/gpu"])
	require.Equal(t, Usage{Total: 4, NonPreemptible: 4}, usage[ProductKey("nvidia.com/gpu", h100)], "the product's quota sees its fractions")
	require.Len(t, usage, 2, "milli-GPUs folded out: %v", usage)

	gpus := WithProduct(map[string]int{SharedKey("nvidia.com/gpu"): 1500}, h100)
	require.Equal(t, map[string]int{SharedKey("nvidia.com/gpu"): 1500, SharedKey(ProductKey("nvidia.com/gpu", h100)): 1500}, gpus)
	l.Reserve(WorkloadKey("batch/v1", "Job", "p", "more"), "product", gpus, false, time.Minute)
	usage = l.Usage("product")["product"]
	require.Equal(t, 6, usage["nvidia.com/gpu"].Total, "4000+1500 milli-GPUs round up to 6")
	require.Equal(t, 6, usage[ProductKey("nvidia.com/gpu", h100)].Total)

	require.False(t, IsProductKey(SharedKey("nvidia.com/gpu")), "a resource's shared demand is no product's")
	require.True(t, IsProductKey(SharedKey(ProductKey("nvidia.com/gpu", h100))))
}
