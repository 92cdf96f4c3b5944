package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// jobSet is a JobSet of 2 GPU pods in namespace llm whose status carries
// condition (type=status), none when empty.
func jobSet(t *testing.T, name, conditionType, status string) *unstructured.Unstructured {
	t.Helper()
	manifest := `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: ` + name + `, namespace: llm, uid: ` + name + `-uid}
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            restartPolicy: Never
            containers:
            - {name: w, image: trainer, resources: {limits: {nvidia.com/gpu: "8"}}}
`
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &obj.Object))
	if conditionType != "" {
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, []any{
			map[string]any{"type": conditionType, "status": status}}, "status", "conditions"))
	}
	return obj
}

// TestFinishedJobSetIsNotLive: a JobSet whose Completed or Failed
// condition is true (the kind's own finished conditions, from the kind
// registry) is finished, so audit leaves it out like a finished Job; one
// still running is audited.
func TestFinishedJobSetIsNotLive(t *testing.T) {
	inv := readSnapshot(t, rawSnapshot)
	for _, obj := range []*unstructured.Unstructured{
		jobSet(t, "done", "Completed", "True"),
		jobSet(t, "broken", "Failed", "True"),
		jobSet(t, "running", "StartupPolicyCompleted", "True"),
		jobSet(t, "not-yet", "Completed", "False"),
	} {
		require.NoError(t, inv.Add(obj))
	}

	rep := run(t, inv, defaultPolicy(t))

	got := verdicts(rep)
	assert.NotContains(t, got, "JobSet llm/done")
	assert.NotContains(t, got, "JobSet llm/broken")
	assert.Contains(t, got, "JobSet llm/running")
	assert.Contains(t, got, "JobSet llm/not-yet")
	assert.Contains(t, rep.Notes, "4 finished workload(s) not audited: they hold no GPUs and are never admitted again",
		"the snapshot's 2 and the 2 finished JobSets")
}
