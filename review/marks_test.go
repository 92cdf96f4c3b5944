package review

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// TestOwnMarksAreNotRequests: a preemptibility key that repeats what
// Mandate recorded when it admitted the object is its own mark, not the
// tenant asking; any other value is the tenant's request.
func TestOwnMarksAreNotRequests(t *testing.T) {
	obj := func(directives string, labels, annotations map[string]any) *unstructured.Unstructured {
		if directives != "" {
			annotations["mandate.dev/directives"] = directives
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "labels": labels, "annotations": annotations},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}},
		}}
	}
	for _, tc := range []struct {
		name   string
		in     *unstructured.Unstructured
		want   *bool
		wantBy string
	}{
		{"admitted non-preemptible", obj(`{"preemptible":false}`,
			map[string]any{"kai.scheduler/preemptibility": "non-preemptible"}, map[string]any{"volcano.sh/preemptable": "false"}), nil, ""},
		{"admitted preemptible", obj(`{"preemptible":true}`,
			map[string]any{"kai.scheduler/preemptibility": "preemptible"}, map[string]any{"volcano.sh/preemptable": "true"}), nil, ""},
		{"the tenant's own claim", obj(`{"preemptible":true}`,
			map[string]any{"kai.scheduler/preemptibility": "non-preemptible"}, map[string]any{}), ptr.To(false),
			"kai.scheduler/preemptibility=non-preemptible"},
		{"never admitted", obj("",
			map[string]any{}, map[string]any{"volcano.sh/preemptable": "false"}), ptr.To(false), "volcano.sh/preemptable=false"},
		{"asks to be preemptible", obj("",
			map[string]any{"kai.scheduler/preemptibility": "preemptible"}, map[string]any{}), ptr.To(true), "kai.scheduler/preemptibility=preemptible"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			w, err := (&Service{}).normalize(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, w.RequestedPreemptible)
			assert.Equal(t, tc.wantBy, w.RequestedPreemptibleBy)
			assert.Equal(t, before, tc.in, "the object itself is left alone")
		})
	}
}
