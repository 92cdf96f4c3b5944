package scheduler

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

func object(t *testing.T, name string) (*unstructured.Unstructured, workload.Workload) {
	t.Helper()
	return loadObject(t, filepath.Join("testdata", "objects", name))
}

func TestApplyErrors(t *testing.T) {
	cases := []struct {
		name      string
		scheduler string
		object    string
		edit      func(obj *unstructured.Unstructured, w *workload.Workload)
		d         evaluator.Directives
		wantMsg   string
	}{
		{
			name: "volcano needs a name for the PodGroup", scheduler: Volcano, object: "pod-owned.yaml",
			edit:    func(_ *unstructured.Unstructured, w *workload.Workload) { w.Owner = nil },
			wantMsg: `Pod has no name yet (only generateName "vllm-7d9f8b6c4-")`,
		},
		{
			name: "volcano tiers are never negative", scheduler: Volcano, object: "job.yaml",
			d:       evaluator.Directives{RequiredLevel: "block", RequiredTier: -1},
			wantMsg: `topology level "block" has tier -1`,
		},
		{
			name: "kai queue must be a label value", scheduler: KAI, object: "job.yaml",
			d:       evaluator.Directives{Queue: "team a"},
			wantMsg: `KAI reads kai.scheduler/queue from a label, and "team a" is not a valid label value`,
		},
		{
			name: "directive label keys must be valid", scheduler: Default, object: "job.yaml",
			d:       evaluator.Directives{Labels: map[string]string{"bad key": "v"}},
			wantMsg: `label key "bad key"`,
		},
		{
			name: "directive label values must be valid", scheduler: Default, object: "job.yaml",
			d:       evaluator.Directives{Labels: map[string]string{"k": "a/b"}},
			wantMsg: `label k value "a/b"`,
		},
		{
			name: "object and workload must match", scheduler: Default, object: "job.yaml",
			edit:    func(_ *unstructured.Unstructured, w *workload.Workload) { w.Kind = "PyTorchJob" },
			wantMsg: "object is batch/v1 Job but the workload batch/v1 PyTorchJob",
		},
		{
			name: "template pointers must resolve", scheduler: Default, object: "job.yaml",
			edit:    func(_ *unstructured.Unstructured, w *workload.Workload) { w.Templates = []string{"/spec/nothing"} },
			wantMsg: `pod template "/spec/nothing": no field "nothing"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, w := object(t, tc.object)
			if tc.edit != nil {
				tc.edit(obj, &w)
			}
			before := obj.DeepCopy()
			a, err := For(tc.scheduler)
			require.NoError(t, err)
			err = a.Apply(obj, w, tc.d)
			require.ErrorIs(t, err, ErrInvalidDirectives)
			assert.Contains(t, err.Error(), tc.wantMsg)
			assert.Equal(t, before, obj, "a rejected directive leaves the object alone")
		})
	}
}

func TestVolcanoGroupName(t *testing.T) {
	cases := []struct {
		name      string
		object    string
		path      []string // to the template's annotations
		wantGroup string
	}{
		{"a user's Job gets Mandate's group", "job.yaml",
			[]string{"spec", "template", "metadata", "annotations"}, "mandate-job-eval-sweep"},
		{"a user's bare Pod gets Mandate's group", "pod.yaml",
			[]string{"metadata", "annotations"}, "mandate-pod-notebook-bob"},
		{"a controller's pod keeps its group", "pod-owned.yaml",
			[]string{"metadata", "annotations"}, "existing-group"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, w := object(t, tc.object)
			path := append(append([]string(nil), tc.path...), AnnotationGroupName)
			require.NoError(t, unstructured.SetNestedField(obj.Object, "existing-group", path...))
			out := apply(t, Volcano, obj, w, evaluator.Directives{Queue: "q"})
			got, _, _ := unstructured.NestedString(out.Object, path...)
			assert.Equal(t, tc.wantGroup, got)
		})
	}
}

func TestVolcanoJobSpec(t *testing.T) {
	cases := []struct {
		name             string
		minAvailable     any // nil: absent
		d                evaluator.Directives
		wantMinAvailable any
		wantTopology     any
	}{
		{"gang minimum fills an absent minAvailable", nil, evaluator.Directives{GangMin: 2}, int64(2), nil},
		{"the model's gang minimum is written over a user's minAvailable (the policy warns)", int64(3), evaluator.Directives{GangMin: 2}, int64(2), nil},
		{"a user's minAvailable stays when the model sets no gang minimum", int64(3), evaluator.Directives{}, int64(3), nil},
		{"no gang minimum, nothing set", nil, evaluator.Directives{}, nil, nil},
		{"soft topology", nil, evaluator.Directives{PreferredLevel: "rack", PreferredTier: 1},
			nil, map[string]any{"mode": "soft", "highestTierAllowed": int64(1)}},
		{"hard wins over soft", nil, evaluator.Directives{RequiredLevel: "block", RequiredTier: 2, PreferredLevel: "rack", PreferredTier: 1},
			nil, map[string]any{"mode": "hard", "highestTierAllowed": int64(2)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, w := object(t, "volcanojob.yaml")
			if tc.minAvailable != nil {
				require.NoError(t, unstructured.SetNestedField(obj.Object, tc.minAvailable, "spec", "minAvailable"))
			}
			spec := apply(t, Volcano, obj, w, tc.d).Object["spec"].(map[string]any)
			assert.Equal(t, tc.wantMinAvailable, spec["minAvailable"])
			assert.Equal(t, tc.wantTopology, spec["networkTopology"])
			assert.Equal(t, "volcano", spec["schedulerName"])
			for _, task := range spec["tasks"].([]any) {
				_, found, _ := unstructured.NestedString(task.(map[string]any), "template", "metadata", "annotations", AnnotationGroupName)
				assert.False(t, found, "Volcano's job controller names the group")
			}
		})
	}
}

func TestKAILabels(t *testing.T) {
	cases := []struct {
		name            string
		d               evaluator.Directives
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		{
			name:            "non-preemptible, no gang, no topology",
			d:               evaluator.Directives{Queue: "q", PriorityClass: "inference", GangMin: 1},
			wantLabels:      map[string]string{"sweep": "17", LabelKAIQueue: "q", LabelKAIPriorityClass: "inference", "kai.scheduler/preemptibility": "non-preemptible"},
			wantAnnotations: map[string]string{},
		},
		{
			name:       "preemptible gang with required placement only",
			d:          evaluator.Directives{Preemptible: true, GangMin: 4, TopologyName: "dc1", RequiredLabel: "rack"},
			wantLabels: map[string]string{"sweep": "17", "kai.scheduler/preemptibility": "preemptible"},
			wantAnnotations: map[string]string{
				AnnotationKAIBatchMinMember: "4", AnnotationKAITopology: "dc1", AnnotationKAIRequiredPlacement: "rack",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, w := object(t, "job.yaml")
			out := apply(t, KAI, obj, w, tc.d)
			assert.Equal(t, tc.wantLabels, out.GetLabels())
			annotations := out.GetAnnotations()
			assert.Contains(t, annotations, AnnotationDirectives, "admitted objects record their directives")
			delete(annotations, AnnotationDirectives)
			assert.Equal(t, tc.wantAnnotations, annotations)
			got, _, _ := unstructured.NestedString(out.Object, "spec", "template", "spec", "schedulerName")
			assert.Equal(t, KAISchedulerName, got)
		})
	}
}

func TestPriorityClass(t *testing.T) {
	cases := []struct {
		name         string
		class        string
		wantClass    string
		wantPriority any
	}{
		{"no directive leaves the pod alone", "", "interactive-high", int64(1000)},
		{"same class keeps the derived priority", "interactive-high", "interactive-high", int64(1000)},
		{"new class drops the stale priority", "train", "train", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, w := object(t, "pod.yaml")
			spec := apply(t, Default, obj, w, evaluator.Directives{PriorityClass: tc.class}).Object["spec"].(map[string]any)
			assert.Equal(t, tc.wantClass, spec["priorityClassName"])
			assert.Equal(t, tc.wantPriority, spec["priority"])
		})
	}
}

func TestApplyValidatesNames(t *testing.T) {
	cases := []struct {
		name      string
		scheduler string
		d         evaluator.Directives
		wantMsg   string
	}{
		{"priority class", Default, evaluator.Directives{PriorityClass: "Train"}, `priority class "Train"`},
		{"volcano queue", Volcano, evaluator.Directives{Queue: "team_a"}, `Volcano queue "team_a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, w := object(t, "job.yaml")
			a, err := For(tc.scheduler)
			require.NoError(t, err)
			err = a.Apply(obj, w, tc.d)
			require.ErrorIs(t, err, ErrInvalidDirectives)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestVolcanoNodeLevelHasNoNetworkTopology(t *testing.T) {
	got, err := networkTopology(evaluator.Directives{RequiredLevel: "node", RequiredTier: 0})
	require.NoError(t, err)
	require.Nil(t, got)
	got, err = networkTopology(evaluator.Directives{RequiredLevel: "block", RequiredTier: 2})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"mode": "hard", "highestTierAllowed": int64(2)}, got)
}
