package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/internal/schedgen"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestChartRulesAreGenerated: the chart's webhook and RBAC rules for the
// governed kinds are what `make chart-rules` writes from the kind
// registry, so registering a kind without regenerating fails here.
func TestChartRulesAreGenerated(t *testing.T) {
	root := envtest.RepoRoot(t)
	generated := filepath.Join(t.TempDir(), "_rules.tpl")
	cmd := exec.Command("go", "run", "./webhook/internal/chartrules", generated)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	want, err := os.ReadFile(generated)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(root, chartDir, "templates", "_rules.tpl"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "run `make chart-rules` after registering a kind")
}

// TestSchedulerFilesAreGenerated: the model schema's scheduler enum and the
// chart's RBAC rules for the schedulers' objects are what `make
// chart-rules` writes from the scheduler registry, so registering a
// scheduler without regenerating fails here.
func TestSchedulerFilesAreGenerated(t *testing.T) {
	root := envtest.RepoRoot(t)
	files, err := schedgen.Generate(root)
	require.NoError(t, err)
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s: run `make chart-rules` after registering a scheduler", path)
	}
}
