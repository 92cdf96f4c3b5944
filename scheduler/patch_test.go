package scheduler

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

// patchObjects are every object of testdata/objects and of the examples'
// workloads, and variants that give Patch's every operation something to
// do: fields derived from a priority class to remove, pod affinity terms
// to append to, null metadata to replace, keys to escape.
func patchObjects(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	examples, err := filepath.Glob(filepath.Join("..", "examples", "workloads", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	out := map[string]*unstructured.Unstructured{}
	for _, file := range append(objectFiles(t), examples...) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		objs, err := workload.Decode(data)
		require.NoError(t, err)
		for i, obj := range objs {
			if _, governed := workload.Lookup(obj.GroupVersionKind()); !governed {
				continue // what a workload stands on (a DRA ResourceClaimTemplate)
			}
			name := fmt.Sprintf("%s#%d", filepath.Base(file), i)
			out[name] = obj
			out[name+"/edited"] = editedForPatch(t, obj)
		}
	}
	return out
}

// editedForPatch is obj with, in each pod template, a priority and a
// preemption policy, a pod affinity term already there and an annotation
// key with "~" and "/", and null labels on the object.
func editedForPatch(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out := obj.DeepCopy()
	w, err := workload.Normalize(out)
	require.NoError(t, err)
	templates, err := templatesOf(out, w)
	require.NoError(t, err)
	for _, tmpl := range templates {
		spec := tmpl.spec()
		spec["priority"] = int64(7)
		spec["preemptionPolicy"] = "Never"
		spec["affinity"] = map[string]any{"podAffinity": map[string]any{
			"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": float64(1),
				"podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname"}}},
			"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"topologyKey": "zone"}},
		}}
		tmpl.setAnnotation("odd~key/with-slash", "x")
	}
	meta := ensureMap(out.Object, "metadata")
	meta["labels"] = nil
	return out
}

// patchDirectives are the directives of testdata/directives.yaml and
// variants: topology at the node level (required and preferred, so that
// Volcano gangs get pod affinity), and the least a decision says.
func patchDirectives(t *testing.T) map[string]evaluator.Directives {
	t.Helper()
	base := loadDirectives(t)
	nodeRequired := base
	nodeRequired.RequiredTier, nodeRequired.RequiredLabel = 0, "kubernetes.io/hostname"
	nodePreferred := base
	nodePreferred.RequiredLevel, nodePreferred.RequiredLabel, nodePreferred.RequiredTier = "", "", 0
	nodePreferred.PreferredTier, nodePreferred.PreferredLabel = 0, "kubernetes.io/hostname"
	return map[string]evaluator.Directives{
		"base":           base,
		"node-required":  nodeRequired,
		"node-preferred": nodePreferred,
		"least":          {Queue: "q", GangMin: 1},
	}
}

// TestPatchRendersExactly: for every object, scheduler and directives,
// applying Patch(original, rendered) to the original, as the API server
// does, gives exactly the rendered object (with and without a reservation
// mark), and Patch leaves both as they were.
func TestPatchRendersExactly(t *testing.T) {
	objects := patchObjects(t)
	directives := patchDirectives(t)
	n := 0
	for name, obj := range objects {
		w, err := workload.Normalize(obj)
		require.NoError(t, err)
		if w.Name == "" {
			w.Name = "named-by-test"
		}
		for _, sched := range append(append([]string(nil), schedulers...), Kueue) {
			for dname, d := range directives {
				d.Scheduler = sched
				if _, err := Render(obj, w, d); err != nil {
					continue // e.g. a Volcano gang without a name; Render's own tests cover it
				}
				for _, mark := range []string{"", "mandate-request-0b1c2d3e"} {
					t.Run(fmt.Sprintf("%s/%s/%s/mark=%v", name, sched, dname, mark != ""), func(t *testing.T) {
						rendered, err := Render(obj, w, d)
						require.NoError(t, err)
						require.NoError(t, MarkReservation(rendered, w, mark))
						before := fixtures.JSONMap(t, obj.Object)
						wantDoc := fixtures.JSONMap(t, rendered.Object)

						ops, err := Patch(obj, rendered)
						require.NoError(t, err)

						doc, err := json.Marshal(obj.Object)
						require.NoError(t, err)
						got := fixtures.ApplyPatch(t, doc, ops)
						require.Equal(t, wantDoc, got, "the patched object is not the rendered one; patch: %+v", ops)
						// Encoded by hand, it is what encoding/json writes.
						raw, err := EncodePatch(ops)
						require.NoError(t, err)
						want, err := json.Marshal(ops)
						require.NoError(t, err)
						require.JSONEq(t, string(want), string(raw))
						require.Equal(t, before, fixtures.JSONMap(t, obj.Object), "Patch changed the original")
						require.Equal(t, wantDoc, fixtures.JSONMap(t, rendered.Object), "Patch changed the rendered object")
						again, err := Patch(rendered, rendered.DeepCopy())
						require.NoError(t, err)
						require.Empty(t, again, "no operation between equal objects")
						n++
					})
				}
			}
		}
	}
	require.Greater(t, n, 100, "too few renderable cases to say anything")
}
