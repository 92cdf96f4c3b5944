package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology"
)

func TestIsGPUResource(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"nvidia.com/gpu", true},
		{"nvidia.com/mig-1g.10gb", true},
		{"nvidia.com/mig-3g.40gb", true},
		{"amd.com/gpu", true},
		{"nvidia.com/mig-", false},
		{"nvidia.com/gpu.shared", true},
		{"nvidia.com/mig-1g.10gb.shared", true},
		{"amd.com/gpu.shared", true},
		{"nvidia.com/mig-.shared", false},
		{".shared", false},
		{"cpu.shared", false},
		{"cpu", false},
		{"memory", false},
		{"", false},
	} {
		require.Equal(t, tc.want, topology.IsGPUResource(tc.name), tc.name)
	}
}

// TestCapacityRules checks which nodes and pods count, through the cluster
// totals of one resource on a one-node (or two-node) cluster.
func TestCapacityRules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       topology.Config
		nodes     []corev1.Node
		pods      []corev1.Pod
		resource  string
		product   string
		wantFree  int
		wantTotal int
	}{
		{name: "empty node", nodes: []corev1.Node{gpuNode("n1", 8)}, wantFree: 8, wantTotal: 8},
		{
			name:     "running and pending pods take GPUs",
			nodes:    []corev1.Node{gpuNode("n1", 8)},
			pods:     []corev1.Pod{gpuPod("a", "n1", 2), gpuPod("b", "n1", 1, withPhase(corev1.PodPending))},
			wantFree: 5, wantTotal: 8,
		},
		{
			name:  "terminal pods do not",
			nodes: []corev1.Node{gpuNode("n1", 8)},
			pods: []corev1.Pod{
				gpuPod("a", "n1", 2, withPhase(corev1.PodSucceeded)),
				gpuPod("b", "n1", 4, withPhase(corev1.PodFailed)),
				gpuPod("c", "n1", 1),
			},
			wantFree: 7, wantTotal: 8,
		},
		{
			name:     "unbound pods do not",
			nodes:    []corev1.Node{gpuNode("n1", 8)},
			pods:     []corev1.Pod{gpuPod("a", "", 4, withPhase(corev1.PodPending))},
			wantFree: 8, wantTotal: 8,
		},
		{
			name:  "containers add up, requests before limits",
			nodes: []corev1.Node{gpuNode("n1", 8)},
			pods: []corev1.Pod{gpuPod("a", "n1", 0, withContainers(
				container("x", "nvidia.com/gpu", 2, true),
				container("y", "nvidia.com/gpu", 1, false),
				container("z", "cpu", 4, true),
			))},
			wantFree: 5, wantTotal: 8,
		},
		{
			name:  "a larger init container wins",
			nodes: []corev1.Node{gpuNode("n1", 8)},
			pods: []corev1.Pod{gpuPod("a", "n1", 1, withInit(
				container("i1", "nvidia.com/gpu", 4, false),
				container("i2", "nvidia.com/gpu", 2, false),
			))},
			wantFree: 4, wantTotal: 8,
		},
		{
			name:  "a smaller init container does not",
			nodes: []corev1.Node{gpuNode("n1", 8)},
			pods: []corev1.Pod{gpuPod("a", "n1", 3, withInit(
				container("i1", "nvidia.com/gpu", 2, false),
			))},
			wantFree: 5, wantTotal: 8,
		},
		{
			name:  "sidecars add to the app containers and to later init containers",
			nodes: []corev1.Node{gpuNode("n1", 8)},
			pods: []corev1.Pod{gpuPod("a", "n1", 1, withInit(
				sidecar(container("s", "nvidia.com/gpu", 1, false)),
				container("i", "nvidia.com/gpu", 4, false),
			))},
			wantFree: 3, wantTotal: 8,
		},
		{
			name:     "more used than allocatable leaves none free",
			nodes:    []corev1.Node{gpuNode("n1", 2)},
			pods:     []corev1.Pod{gpuPod("a", "n1", 3)},
			wantFree: 0, wantTotal: 2,
		},
		{name: "cordoned", nodes: []corev1.Node{gpuNode("n1", 8, cordoned)}},
		{name: "NoSchedule taint", nodes: []corev1.Node{gpuNode("n1", 8, withTaint("maintenance", corev1.TaintEffectNoSchedule))}},
		{name: "NoExecute taint", nodes: []corev1.Node{gpuNode("n1", 8, withTaint("node.kubernetes.io/not-ready", corev1.TaintEffectNoExecute))}},
		{
			name:     "PreferNoSchedule taint",
			nodes:    []corev1.Node{gpuNode("n1", 8, withTaint("maintenance", corev1.TaintEffectPreferNoSchedule))},
			wantFree: 8, wantTotal: 8,
		},
		{
			name:     "configured tolerated taint",
			cfg:      topology.Config{ToleratedTaints: []string{"nvidia.com/gpu", "dedicated"}},
			nodes:    []corev1.Node{gpuNode("n1", 8, withTaint("dedicated", corev1.TaintEffectNoSchedule))},
			wantFree: 8, wantTotal: 8,
		},
		{
			name:  "empty tolerated taints tolerate nothing",
			cfg:   topology.Config{ToleratedTaints: []string{}},
			nodes: []corev1.Node{gpuNode("n1", 8)},
		},
		{name: "NotReady", nodes: []corev1.Node{gpuNode("n1", 8, withCondition(corev1.NodeReady, corev1.ConditionFalse))}},
		{name: "Ready unknown", nodes: []corev1.Node{gpuNode("n1", 8, withCondition(corev1.NodeReady, corev1.ConditionUnknown))}},
		{name: "no conditions count as ready", nodes: []corev1.Node{gpuNode("n1", 8, withNoConditions)}, wantFree: 8, wantTotal: 8},
		{
			name:  "unhealthy label",
			cfg:   topology.Config{UnhealthyLabel: "example.com/gpu-unhealthy"},
			nodes: []corev1.Node{gpuNode("n1", 8, withLabels(map[string]string{"example.com/gpu-unhealthy": "xid-79"}))},
		},
		{
			name:  "unhealthy label without a value",
			cfg:   topology.Config{UnhealthyLabel: "example.com/gpu-unhealthy"},
			nodes: []corev1.Node{gpuNode("n1", 8, withLabels(map[string]string{"example.com/gpu-unhealthy": ""}))},
		},
		{
			name:     "unhealthy label false",
			cfg:      topology.Config{UnhealthyLabel: "example.com/gpu-unhealthy"},
			nodes:    []corev1.Node{gpuNode("n1", 8, withLabels(map[string]string{"example.com/gpu-unhealthy": "false"}))},
			wantFree: 8, wantTotal: 8,
		},
		{
			name:  "unhealthy condition",
			cfg:   topology.Config{UnhealthyConditions: []string{"GPUUnhealthy"}},
			nodes: []corev1.Node{gpuNode("n1", 8, withCondition("GPUUnhealthy", corev1.ConditionTrue))},
		},
		{
			name:     "unhealthy condition false",
			cfg:      topology.Config{UnhealthyConditions: []string{"GPUUnhealthy"}},
			nodes:    []corev1.Node{gpuNode("n1", 8, withCondition("GPUUnhealthy", corev1.ConditionFalse))},
			wantFree: 8, wantTotal: 8,
		},
		{
			name:     "MIG profile",
			nodes:    []corev1.Node{gpuNode("n1", 0, withAllocatable("nvidia.com/mig-1g.10gb", 14))},
			pods:     []corev1.Pod{gpuPod("a", "n1", 0, withContainers(container("c", "nvidia.com/mig-1g.10gb", 3, false)))},
			resource: "nvidia.com/mig-1g.10gb",
			wantFree: 11, wantTotal: 14,
		},
		{
			name:     "AMD",
			nodes:    []corev1.Node{gpuNode("n1", 0, withAllocatable("amd.com/gpu", 8))},
			pods:     []corev1.Pod{gpuPod("a", "n1", 0, withContainers(container("c", "amd.com/gpu", 2, false)))},
			resource: "amd.com/gpu",
			wantFree: 6, wantTotal: 8,
		},
		{
			name: "product filter",
			nodes: []corev1.Node{
				gpuNode("n1", 8),
				gpuNode("n2", 4, withLabels(map[string]string{"nvidia.com/gpu.product": "B200"})),
				gpuNode("n3", 2, withoutLabel("nvidia.com/gpu.product")),
			},
			product:  "B200",
			wantFree: 4, wantTotal: 4,
		},
		{
			name: "any product",
			nodes: []corev1.Node{
				gpuNode("n1", 8),
				gpuNode("n2", 4, withLabels(map[string]string{"nvidia.com/gpu.product": "B200"})),
				gpuNode("n3", 2, withoutLabel("nvidia.com/gpu.product")),
			},
			wantFree: 14, wantTotal: 14,
		},
		{
			name:     "custom product label",
			cfg:      topology.Config{ProductLabel: "example.com/accelerator"},
			nodes:    []corev1.Node{gpuNode("n1", 8, withLabels(map[string]string{"example.com/accelerator": "B200"}))},
			product:  "B200",
			wantFree: 8, wantTotal: 8,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Levels = testLevels
			snap, err := topology.Build(cfg, tc.nodes, tc.pods)
			require.NoError(t, err)
			got, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 1, Resource: tc.resource, Product: tc.product})
			require.NoError(t, err)
			require.Equal(t, tc.wantFree, got.ClusterFree, "free")
			require.Equal(t, tc.wantTotal, got.ClusterTotal, "total")
			require.Equal(t, tc.wantFree > 0, got.FitsNow, "fits now")
		})
	}
}
