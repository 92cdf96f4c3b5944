package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestWithoutOwnMarksDropsOnlyMandatesOwnMarks(t *testing.T) {
	obj := func(directives string, labels, annotations map[string]any) *unstructured.Unstructured {
		if directives != "" {
			annotations["mandate.dev/directives"] = directives
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "labels": labels, "annotations": annotations},
		}}
	}
	for _, tc := range []struct {
		name             string
		in               *unstructured.Unstructured
		wantKAI, wantVol string
	}{
		{"admitted non-preemptible", obj(`{"preemptible":false}`,
			map[string]any{"kai.scheduler/preemptibility": "non-preemptible"}, map[string]any{"volcano.sh/preemptable": "false"}), "", ""},
		{"admitted preemptible", obj(`{"preemptible":true}`,
			map[string]any{"kai.scheduler/preemptibility": "preemptible"}, map[string]any{"volcano.sh/preemptable": "true"}), "", ""},
		{"the tenant's own claim", obj(`{"preemptible":true}`,
			map[string]any{"kai.scheduler/preemptibility": "non-preemptible"}, map[string]any{"volcano.sh/preemptable": "false"}), "non-preemptible", "false"},
		{"never admitted", obj("",
			map[string]any{"kai.scheduler/preemptibility": "non-preemptible"}, map[string]any{"volcano.sh/preemptable": "false"}), "non-preemptible", "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := WithoutOwnMarks(tc.in)
			assert.Equal(t, tc.wantKAI, got.GetLabels()["kai.scheduler/preemptibility"])
			assert.Equal(t, tc.wantVol, got.GetAnnotations()["volcano.sh/preemptable"])
			assert.Equal(t, before, tc.in, "the object itself is left alone")
		})
	}
}
