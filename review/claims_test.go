package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
)

const snapshotClaims = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: product}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
`

const claimJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: dra, namespace: product}
spec:
  parallelism: 8
  completions: 8
  template:
    spec:
      restartPolicy: Never
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: one-gpu}
      containers:
      - {name: c, image: x, resources: {claims: [{name: gpu}]}}
`

// TestClaimsFromTheSnapshot: mandate eval reads DRA claim templates from
// the cluster snapshot file, as serve does from its cache: 8 pods with a
// one-GPU template each count 8 GPUs. Without a reader the claims are
// named as not counted.
func TestClaimsFromTheSnapshot(t *testing.T) {
	job := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(claimJob), &job.Object))

	r := exampleReviewer(t)
	res, err := r.Review(context.Background(), job, evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, 0, res.Workload.TotalGPUs)
	assert.Contains(t, strings.Join(res.Decision.Warnings, "\n"), review.CodeDRAUnchecked)

	require.NoError(t, r.State.Load(strings.NewReader(snapshotClaims)))
	r.Claims = r.State.Claims()
	res, err = r.Review(context.Background(), job, evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, 8, res.Workload.TotalGPUs)
	assert.Equal(t, 1, res.Workload.GPUsPerPod)
	assert.Equal(t, "nvidia.com/gpu", res.Workload.GPUResource)
	assert.True(t, res.Decision.Allowed, "%v", res.Decision.Violations)
	assert.NotContains(t, strings.Join(res.Decision.Warnings, "\n"), "DRA_")
}
