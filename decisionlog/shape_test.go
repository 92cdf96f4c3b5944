package decisionlog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/workload"
)

// TestRedactKeepsEveryKindsGang: a redacted object of every registered
// kind still normalises to the same gang (its roles, their sizes and GPUs,
// the elastic minimum and where its pod templates are), so the decision
// log shows the gang that was decided. The objects are the normaliser's
// own test objects (workload/testdata), one kind at least each, without
// annotations: their values are always redacted, whatever they say.
func TestRedactKeepsEveryKindsGang(t *testing.T) {
	files, err := filepath.Glob("../workload/testdata/*.yaml")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(raw, &obj.Object), f)
		k, ok := workload.Lookup(obj.GroupVersionKind())
		if !ok {
			continue
		}
		seen[k.Label] = true
		obj.SetAnnotations(nil)
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, err := workload.Normalize(obj)
			require.NoError(t, err)
			got, err := workload.Normalize(&unstructured.Unstructured{Object: decisionlog.Redact(obj.Object)})
			require.NoError(t, err, "the redacted %s no longer normalises", k.Label)
			assert.Equal(t, want.Roles, got.Roles)
			assert.Equal(t, want.Templates, got.Templates)
			assert.Equal(t, want.Pods, got.Pods)
			assert.Equal(t, want.MinPods, got.MinPods)
			assert.Equal(t, want.GPUsPerPod, got.GPUsPerPod)
			assert.Equal(t, want.TotalGPUs, got.TotalGPUs)
			assert.Equal(t, want.GPUResource, got.GPUResource)
		})
	}
	for _, k := range workload.Kinds() {
		assert.True(t, seen[k.Label], "no test object of %s in workload/testdata", k.Label)
	}
}
