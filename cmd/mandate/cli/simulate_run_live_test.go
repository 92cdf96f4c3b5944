package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/simulate/replay"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestSimulateRunKubeconfig starts from a real API server's cluster: one
// 8-GPU node on which platform's pod runs with 4 GPUs. b (research-llm, 4
// GPUs, an hour) fits beside it; a (8 GPUs) never does while the pod runs
// (to the end): never started, held by capacity. platform's pod counts 4
// GPU-hours, submitting nothing.
func TestSimulateRunKubeconfig(t *testing.T) {
	env := envtest.Start(t)
	ctx := context.Background()
	for _, ns := range []string{"platform", "research-llm"} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{"mandate.dev/tenant": ns}}}))
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0", Labels: map[string]string{
		"kubernetes.io/hostname": "gpu-0", "topology.kubernetes.io/zone": "z", "mandate.dev/spine-block": "s",
		"mandate.dev/leaf-block": "b", "nvidia.com/gpu.clique": "c", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}
	require.NoError(t, env.Client.Create(ctx, node))
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		"nvidia.com/gpu": resource.MustParse("8")}
	node.Status = corev1.NodeStatus{Allocatable: res, Capacity: res,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
	require.NoError(t, env.Client.Status().Update(ctx, node))
	node.Spec.Taints = nil // the API server's not-ready taint: no kubelet will lift it
	require.NoError(t, env.Client.Update(ctx, node))
	require.NoError(t, env.Client.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "notebook"},
		Spec: corev1.PodSpec{NodeName: "gpu-0", PriorityClassName: "", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}}}}},
	}))
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(trace, []byte(`{"name":"a","submit":0,"duration":3600,"tenant":"research-llm","pods":1,"gpusPerPod":8,"priorityClass":"train"}
{"name":"b","submit":0,"duration":3600,"tenant":"research-llm","pods":1,"gpusPerPod":4,"priorityClass":"train"}
`), 0o600))

	code, out, errText := run(t, "simulate", "run", "--trace", trace, "--kubeconfig", env.WriteKubeconfig(t, "simulator"), "-o", "json")
	require.Equal(t, 0, code, errText)
	o := simulateOutcome(t, out)
	assert.Equal(t, 3600.0, o.Baseline.End)
	llm, platform := tenantOf(t, o.Baseline, "research-llm"), tenantOf(t, o.Baseline, "platform")
	assert.InDelta(t, 4.0, llm.GPUHoursUsed, 1e-9, "b: 4 GPUs for an hour")
	llm.GPUHoursUsed = 0
	assert.Equal(t, replay.TenantStats{Tenant: "research-llm", Submitted: 2, Admitted: 2, Completed: 1, NeverStarted: 1,
		HeldByCapacity: 1, GPUHoursGuaranteed: 96}, llm)
	assert.Equal(t, 0, platform.Submitted)
	assert.InDelta(t, 4.0, platform.GPUHoursUsed, 1e-9)
}
