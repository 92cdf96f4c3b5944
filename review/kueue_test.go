package review_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// kueueReviewer is the example model and cluster with tenant product on
// Kueue.
func kueueReviewer(t *testing.T) *review.Service {
	t.Helper()
	ev := fixtures.Evaluator(t, "test", func(model map[string]any) {
		model["tenants"].(map[string]any)["product"].(map[string]any)["scheduler"] = "kueue"
	})
	state, err := cluster.New(ev.Model())
	require.NoError(t, err)
	require.NoError(t, state.LoadFile("../examples/cluster.yaml"))
	return &review.Service{Decider: ev, State: state}
}

func suspendedJob(name string, pods int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": "product"},
		"spec": map[string]any{
			"suspend":     true,
			"parallelism": pods, "completions": pods,
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers": []any{map[string]any{
					"name": "c", "image": "x",
					"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "8"}},
				}},
			}},
		},
	}}
}

// TestKueueWorkloadIsDecidedButNotCounted: a tenant on Kueue gets its
// LocalQueue, WorkloadPriorityClass and TAS annotation; the workload is
// decided for authority, but its quota is Kueue's: Mandate's usage does
// not change.
func TestKueueWorkloadIsDecidedButNotCounted(t *testing.T) {
	r := kueueReviewer(t)
	before := r.State.Usage("product")["product"]["nvidia.com/gpu"]
	rv, err := r.Review(context.Background(), suspendedJob("tuned", 2), evaluator.Request{Operation: "CREATE", UID: "u-1"})
	require.NoError(t, err)
	require.True(t, rv.Decision.Allowed, "%v", rv.Decision.Violations)
	assert.Equal(t, scheduler.Kueue, rv.Decision.Directives.Scheduler)
	m := rv.Mutated
	assert.Equal(t, "product", m.GetLabels()[scheduler.LabelKueueQueueName])
	assert.Equal(t, rv.Decision.Directives.PriorityClass, m.GetLabels()[scheduler.LabelKueuePriorityClass])
	tas, _, _ := unstructured.NestedString(m.Object, "spec", "template", "metadata", "annotations", scheduler.AnnotationKueueRequiredTopology)
	assert.Equal(t, rv.Decision.Directives.RequiredLabel, tas)
	assert.NotEmpty(t, tas)
	suspend, _, _ := unstructured.NestedBool(m.Object, "spec", "suspend")
	assert.True(t, suspend, "Kueue unsuspends it")
	assert.Equal(t, before, r.State.Usage("product")["product"]["nvidia.com/gpu"], "Kueue's quota, not counted by Mandate")

	t.Run("the ceiling still holds", func(t *testing.T) {
		rv, err := r.Review(context.Background(), suspendedJob("huge", 40), evaluator.Request{Operation: "CREATE", UID: "u-2"})
		require.NoError(t, err)
		assert.False(t, rv.Decision.Allowed)
	})
}
