package scheduler

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var schedulers = []string{Volcano, KAI, Default}

// objectFiles lists the inputs every adapter is tested on, one per kind and
// pod shape.
func objectFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "objects", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

func loadObject(t *testing.T, file string) (*unstructured.Unstructured, workload.Workload) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	objs, err := workload.Decode(data)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	w, err := workload.Normalize(objs[0])
	require.NoError(t, err)
	return objs[0], w
}

func loadDirectives(t *testing.T) evaluator.Directives {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "directives.yaml"))
	require.NoError(t, err)
	var d evaluator.Directives
	require.NoError(t, yaml.UnmarshalStrict(data, &d))
	return d
}

func apply(t *testing.T, scheduler string, obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) *unstructured.Unstructured {
	t.Helper()
	a, err := For(scheduler)
	require.NoError(t, err)
	out := obj.DeepCopy()
	require.NoError(t, a.Apply(out, w, d))
	return out
}

func caseName(file, scheduler string) string {
	return strings.TrimSuffix(filepath.Base(file), ".yaml") + "." + scheduler
}

// forEachCase runs test as a subtest for every object of objectFiles with
// every scheduler, on the object decoded and normalized.
func forEachCase(t *testing.T, test func(t *testing.T, file, scheduler string, obj *unstructured.Unstructured, w workload.Workload)) {
	t.Helper()
	for _, file := range objectFiles(t) {
		for _, scheduler := range schedulers {
			t.Run(caseName(file, scheduler), func(t *testing.T) {
				obj, w := loadObject(t, file)
				test(t, file, scheduler, obj, w)
			})
		}
	}
}

// TestApplyGolden renders testdata/directives.yaml onto every object in
// testdata/objects for every scheduler and compares the result with
// testdata/<object>.<scheduler>.golden.yaml.
func TestApplyGolden(t *testing.T) {
	d := loadDirectives(t)
	forEachCase(t, func(t *testing.T, file, scheduler string, obj *unstructured.Unstructured, w workload.Workload) {
		got, err := yaml.Marshal(apply(t, scheduler, obj, w, d).Object)
		require.NoError(t, err)
		path := filepath.Join("testdata", caseName(file, scheduler)+".golden.yaml")
		if *update {
			require.NoError(t, os.WriteFile(path, got, 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test -update to create it")
		assert.Equal(t, string(want), string(got), "(-want +got)")
	})
}

// TestApplyIdempotent: applying twice is applying once, for every kind and
// scheduler, and Patch of the two is empty.
func TestApplyIdempotent(t *testing.T) {
	d := loadDirectives(t)
	forEachCase(t, func(t *testing.T, _, scheduler string, obj *unstructured.Unstructured, w workload.Workload) {
		once := apply(t, scheduler, obj, w, d)
		twice := apply(t, scheduler, once, w, d)
		ops, err := Patch(once, twice)
		require.NoError(t, err)
		assert.Empty(t, ops)
		assert.Equal(t, once.Object, twice.Object)
	})
}

// owned lists, per scheduler, the leaf paths an adapter may change in
// testdata/directives.yaml's terms; {T} stands for a pod template pointer.
var owned = map[string][]string{
	"common": {
		`/metadata/labels/mandate\.dev~1decision`,
		`/metadata/annotations/mandate\.dev~1revision`,
		`/metadata/annotations/mandate\.dev~1directives`,
		`{T}/metadata/labels/mandate\.dev~1(decision|preemptible)`,
		`{T}/spec/priorityClassName`,
		`{T}/spec/priority`,
		`{T}/spec/preemptionPolicy`,
	},
	Volcano: {
		`{T}/spec/schedulerName`,
		`{T}/metadata/annotations/(scheduling\.k8s\.io~1group-name|scheduling\.volcano\.sh~1queue-name|volcano\.sh~1preemptable)`,
		`/spec/(schedulerName|queue|priorityClassName|minAvailable|networkTopology/mode|networkTopology/highestTierAllowed)`, // Volcano Job only
	},
	KAI: {
		`{T}/spec/schedulerName`,
		`/metadata/labels/(kai\.scheduler~1queue|priorityClassName|kai\.scheduler~1preemptibility)`,
		`/metadata/annotations/kai\.scheduler~1(topology|topology-required-placement|topology-preferred-placement|batch-min-member)`,
	},
	Default: nil,
}

// TestApplyTouchesOnlyOwnedFields: every change an adapter makes is to a
// field the authority model owns; the user's labels, annotations,
// containers and everything else stay as they were.
func TestApplyTouchesOnlyOwnedFields(t *testing.T) {
	d := loadDirectives(t)
	forEachCase(t, func(t *testing.T, _, scheduler string, obj *unstructured.Unstructured, w workload.Workload) {
		allowed := allowedPaths(t, w, scheduler)
		mutated := apply(t, scheduler, obj, w, d)
		ops, err := Patch(obj, mutated)
		require.NoError(t, err)
		require.NotEmpty(t, ops)
		for _, op := range ops {
			if op.Operation == "remove" {
				assert.Regexp(t, `/spec/(priority|preemptionPolicy)$`, op.Path, "only fields derived from the priority class are removed")
			}
			for _, leaf := range leaves(op.Path, op.Value) {
				assert.Regexp(t, allowed, leaf, "%s %s changes a field the authority model does not own", op.Operation, leaf)
			}
		}
		// And the patch really produces the mutated object.
		patched := applyPatch(t, obj, ops)
		assert.Equal(t, fixtures.JSONMap(t, mutated.Object), patched)
	})
}

func allowedPaths(t *testing.T, w workload.Workload, scheduler string) *regexp.Regexp {
	t.Helper()
	var alts []string
	for _, p := range append(append([]string(nil), owned["common"]...), owned[scheduler]...) {
		if !strings.Contains(p, "{T}") {
			alts = append(alts, p)
			continue
		}
		for _, tmpl := range w.Templates {
			alts = append(alts, strings.ReplaceAll(p, "{T}", regexp.QuoteMeta(tmpl)))
		}
	}
	return regexp.MustCompile("^(" + strings.Join(alts, "|") + ")$")
}

// leaves expands an operation whose value is an object into the paths of
// its leaves, so "add /metadata/annotations {a: b}" counts as adding
// /metadata/annotations/a.
func leaves(path string, value any) []string {
	m, ok := value.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{path}
	}
	var out []string
	for k, v := range m {
		key := strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
		out = append(out, leaves(path+"/"+key, v)...)
	}
	return out
}

func applyPatch(t *testing.T, obj *unstructured.Unstructured, ops any) map[string]any {
	t.Helper()
	doc, err := json.Marshal(obj.Object)
	require.NoError(t, err)
	return fixtures.ApplyPatch(t, doc, ops)
}

func TestPatchDeterministic(t *testing.T) {
	d := loadDirectives(t)
	obj, w := loadObject(t, filepath.Join("testdata", "objects", "volcanojob.yaml"))
	mutated := apply(t, Volcano, obj, w, d)
	first, err := Patch(obj, mutated)
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		again, err := Patch(obj, mutated)
		require.NoError(t, err)
		require.Equal(t, first, again, "run %d", i)
	}
}

func TestFor(t *testing.T) {
	cases := []struct {
		scheduler string
		wantName  string
		wantErr   error
	}{
		{"volcano", Volcano, nil},
		{"kai", KAI, nil},
		{"default", Default, nil},
		{"", Default, nil},
		{"yunikorn", "", ErrUnknownScheduler},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.scheduler), func(t *testing.T) {
			a, err := For(tc.scheduler)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantName, a.Name())
		})
	}
}
