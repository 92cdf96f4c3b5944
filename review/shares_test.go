package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// memoryJob is 16 KAI gpu-memory pods of 20 GiB each.
const memoryJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: shared, namespace: product}
spec:
  parallelism: 16
  completions: 16
  template:
    metadata: {annotations: {gpu-memory: "20480"}}
    spec:
      restartPolicy: Never
      priorityClassName: build
      containers: [{name: c, image: x}]
`

func memoryReviewer(t *testing.T, gpuMemory map[string]any) *review.Service {
	t.Helper()
	ev := fixtures.Evaluator(t, "test", func(m map[string]any) {
		if gpuMemory != nil {
			m["gpuMemoryMiB"] = gpuMemory
		}
	})
	state, err := cluster.New(ev.Model())
	require.NoError(t, err)
	require.NoError(t, state.LoadFile("../examples/cluster.yaml"))
	return &review.Service{Decider: ev, State: state}
}

// TestGPUMemoryCountsItsShare: with the model's device memory, 16 pods of
// 20 GiB on 80 GiB GPUs count 4 GPUs (exactly 4000 milli-GPUs) and are
// placed 4 to a device; without it they count 16 whole devices and the
// decision says so.
func TestGPUMemoryCountsItsShare(t *testing.T) {
	job := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(memoryJob), &job.Object))
	req := evaluator.Request{Operation: "CREATE", DryRun: true}

	res, err := memoryReviewer(t, nil).Review(context.Background(), job, req)
	require.NoError(t, err)
	assert.Equal(t, 16, res.Workload.TotalGPUs)
	assert.Zero(t, res.Workload.GPUShareMilli)
	warnings := strings.Join(res.Decision.Warnings, "\n")
	assert.Contains(t, warnings, review.CodeGPUMemoryUnmapped+": the authority model's gpuMemoryMiB gives no device memory for nvidia.com/gpu, so each pod's gpu-memory of 20480 MiB counts as 1 whole device against quota and placement")

	mapped := memoryReviewer(t, map[string]any{"nvidia.com/gpu": map[string]any{"default": 81920}})
	res, err = mapped.Review(context.Background(), job, req)
	require.NoError(t, err)
	assert.Equal(t, 4, res.Workload.TotalGPUs)
	assert.Equal(t, int64(4000), res.Workload.TotalMilliGPUs)
	assert.Equal(t, 250, res.Workload.GPUShareMilli)
	assert.True(t, res.Decision.Allowed, "%v", res.Decision.Violations)
	assert.NotContains(t, strings.Join(res.Decision.Warnings, "\n"), review.CodeGPUMemoryUnmapped)

	// A product's own entry wins over the default; a product without one
	// and no default is unmapped.
	pinned := job.DeepCopy()
	require.NoError(t, unstructured.SetNestedStringMap(pinned.Object, map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, "spec", "template", "spec", "nodeSelector"))
	byProduct := memoryReviewer(t, map[string]any{"nvidia.com/gpu": map[string]any{"default": 81920, "products": map[string]any{"NVIDIA-A100-SXM4-40GB": 40960}}})
	res, err = byProduct.Review(context.Background(), pinned, req)
	require.NoError(t, err)
	assert.Equal(t, 500, res.Workload.GPUShareMilli)
	assert.Equal(t, 8, res.Workload.TotalGPUs)

	onlyH100 := memoryReviewer(t, map[string]any{"nvidia.com/gpu": map[string]any{"products": map[string]any{"NVIDIA-H100-80GB-HBM3": 81920}}})
	res, err = onlyH100.Review(context.Background(), pinned, req)
	require.NoError(t, err)
	assert.Equal(t, 16, res.Workload.TotalGPUs)
	assert.Contains(t, strings.Join(res.Decision.Warnings, "\n"), "no device memory for NVIDIA-A100-SXM4-40GB nvidia.com/gpu")
}
