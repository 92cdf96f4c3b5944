package review_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/model"
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

// buildJob is suspendedJob in the non-preemptible tier build.
func buildJob(name string, pods int64) *unstructured.Unstructured {
	j := suspendedJob(name, pods)
	_ = unstructured.SetNestedField(j.Object, "build", "spec", "template", "spec", "priorityClassName")
	return j
}

// TestKueueGuaranteedWorkloadHolds: a non-preemptible workload of a tenant
// on Kueue reserves its GPUs at admission, although Kueue keeps it
// suspended until its ClusterQueue admits it, so that a second one created
// right after it is not granted the same guarantee: product (128 GPUs
// guaranteed, 112 used by non-preemptible pods) gets the first 16-GPU
// build Job non-preemptible and the second one preemptible, in the
// borrowed class build-borrowed.
func TestKueueGuaranteedWorkloadHolds(t *testing.T) {
	r := kueueReviewer(t)
	ctx := context.Background()
	before := r.State.Usage("product")["product"]["nvidia.com/gpu"]

	first, err := r.Review(ctx, buildJob("first", 2), evaluator.Request{Operation: "CREATE", UID: "u-1"})
	require.NoError(t, err)
	require.True(t, first.Decision.Allowed, "%v", first.Decision.Violations)
	assert.False(t, first.Decision.Directives.Preemptible, "within product's guarantee: granted it")
	after := r.State.Usage("product")["product"]["nvidia.com/gpu"]
	assert.Equal(t, before.NonPreemptible+16, after.NonPreemptible, "the guarantee it was granted is reserved while Kueue queues it")

	second, err := r.Review(ctx, buildJob("second", 2), evaluator.Request{Operation: "CREATE", UID: "u-2"})
	require.NoError(t, err)
	require.True(t, second.Decision.Allowed, "%v", second.Decision.Violations)
	assert.True(t, second.Decision.Directives.Preemptible, "beyond product's guarantee once the first holds it: borrowed")
	assert.Equal(t, model.BorrowedClass("build"), second.Decision.Directives.PriorityClass)
	assert.Equal(t, "build", first.Decision.Directives.PriorityClass)
	assert.Equal(t, after, r.State.Usage("product")["product"]["nvidia.com/gpu"], "borrowed work on Kueue reserves nothing: Kueue's quota governs it")
}

// TestKueueHoldOf: the hold of a stored workload of a tenant on Kueue. A
// non-preemptible one holds its demand from admission until it finishes
// or is being deleted, suspended (queued, or evicted by Kueue) or not; a
// preemptible one holds nothing (its pods count once Kueue lets them
// run).
func TestKueueHoldOf(t *testing.T) {
	r := kueueReviewer(t)
	ctx := context.Background()
	stored := func(job *unstructured.Unstructured, uid string) *unstructured.Unstructured {
		t.Helper()
		rv, err := r.Review(ctx, job, evaluator.Request{Operation: "CREATE", UID: uid, DryRun: true})
		require.NoError(t, err)
		require.True(t, rv.Decision.Allowed, "%v", rv.Decision.Violations)
		obj := rv.Mutated.DeepCopy()
		obj.SetUID(types.UID(uid))
		obj.SetGeneration(1)
		return obj
	}
	gpus := func(obj *unstructured.Unstructured) map[string]int {
		t.Helper()
		h, ok := r.HoldOf(obj)
		require.True(t, ok, "an admitted Job has a hold")
		return h.GPUs
	}
	guaranteed := stored(buildJob("guaranteed", 2), "u-1")
	want := map[string]int{"nvidia.com/gpu": 16}
	assert.Equal(t, want, gpus(guaranteed), "queued (suspended)")

	running := guaranteed.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(running.Object, false, "spec", "suspend"))
	assert.Equal(t, want, gpus(running), "admitted by Kueue and running")

	evicted := running.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(evicted.Object, true, "spec", "suspend"))
	assert.Equal(t, want, gpus(evicted), "suspended again by Kueue's eviction")

	finished := running.DeepCopy()
	require.NoError(t, unstructured.SetNestedSlice(finished.Object, []any{map[string]any{"type": "Complete", "status": "True"}}, "status", "conditions"))
	assert.Empty(t, gpus(finished), "finished")

	deleting := guaranteed.DeepCopy()
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	assert.Empty(t, gpus(deleting), "being deleted")

	borrowed := stored(suspendedJob("borrowed", 2), "u-2") // build-preemptible, the class default
	h, ok := r.HoldOf(borrowed)
	require.True(t, ok)
	require.True(t, h.Preemptible)
	assert.Empty(t, h.GPUs, "preemptible, queued")
	require.NoError(t, unstructured.SetNestedField(borrowed.Object, false, "spec", "suspend"))
	assert.Empty(t, gpus(borrowed), "preemptible, running: its pods count themselves")
}

// TestKueueUnsuspendIsNoRaise: Kueue admitting a workload (unsuspending
// it) is not a raise to decide again, for a guaranteed one (its hold
// already counts it) as for a borrowed one (Kueue's quota admitted it);
// a bigger demand still is.
func TestKueueUnsuspendIsNoRaise(t *testing.T) {
	r := kueueReviewer(t)
	for _, job := range []*unstructured.Unstructured{buildJob("guaranteed", 2), suspendedJob("borrowed", 2)} {
		rv, err := r.Review(context.Background(), job, evaluator.Request{Operation: "CREATE", UID: "u-" + job.GetName(), DryRun: true})
		require.NoError(t, err)
		require.True(t, rv.Decision.Allowed, "%v", rv.Decision.Violations)
		old := rv.Mutated
		admitted := old.DeepCopy()
		require.NoError(t, unstructured.SetNestedField(admitted.Object, false, "spec", "suspend"))
		raises, err := r.ChangeRaises(old, admitted)
		require.NoError(t, err)
		assert.False(t, raises, "%s unsuspended by Kueue", job.GetName())
		bigger := admitted.DeepCopy()
		for _, f := range []string{"parallelism", "completions"} {
			require.NoError(t, unstructured.SetNestedField(bigger.Object, int64(3), "spec", f))
		}
		raises, err = r.ChangeRaises(old, bigger)
		require.NoError(t, err)
		assert.True(t, raises, "%s given a third pod", job.GetName())
	}
}
