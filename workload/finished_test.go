package workload_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/workload"
)

// TestKindsFinish: each kind declares how it finishes, and only its own
// terminal conditions or phases finish it.
func TestKindsFinish(t *testing.T) {
	conditions := func(typ string) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": typ, "status": "True"}}}
	}
	for _, tc := range []struct {
		gvk          schema.GroupVersionKind
		status       map[string]any
		wantFinished bool
	}{
		{workload.PodGVK, map[string]any{"phase": "Succeeded"}, true},
		{workload.PodGVK, map[string]any{"phase": "Running"}, false},
		{workload.JobGVK, conditions("Complete"), true},
		{workload.JobGVK, conditions("Failed"), true},
		{workload.JobGVK, conditions("Suspended"), false},
		{workload.JobSetGVK, conditions("Completed"), true},
		{workload.JobSetGVK, conditions("Failed"), true},
		{workload.JobSetGVK, conditions("StartupPolicyCompleted"), false},
		{workload.PyTorchJobGVK, conditions("Succeeded"), true},
		{workload.PyTorchJobGVK, conditions("Running"), false},
		{workload.MPIJobGVK, conditions("Failed"), true},
		{workload.TrainJobGVK, conditions("Complete"), true},
		{workload.VolcanoJobGVK, map[string]any{"state": map[string]any{"phase": "Aborted"}}, true},
		{workload.VolcanoJobGVK, map[string]any{"state": map[string]any{"phase": "Running"}}, false},
		{workload.RayJobGVK, map[string]any{"jobDeploymentStatus": "Complete"}, true},
		{workload.RayJobGVK, map[string]any{"jobDeploymentStatus": "Running"}, false},
		{workload.DeploymentGVK, conditions("Failed"), false},
		{workload.RayClusterGVK, conditions("Complete"), false},
	} {
		k, ok := workload.Lookup(tc.gvk)
		require.True(t, ok, tc.gvk.String())
		obj := &unstructured.Unstructured{Object: map[string]any{"status": tc.status}}
		obj.SetGroupVersionKind(tc.gvk)
		assert.Equal(t, tc.wantFinished, k.Finished.IsFinished(obj), "%s %v", tc.gvk.Kind, tc.status)
	}
}
