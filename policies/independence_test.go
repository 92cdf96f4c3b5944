package policies_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

// TestLogicSuiteOutlivesTheExampleOrganisation: the policy logic tests
// decide with their own model (package mandate.testing), so an
// organisation that replaces the example data.json keeps a passing logic
// suite; only the tests of the shipped data, beside it, are its own.
func TestLogicSuiteOutlivesTheExampleOrganisation(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(".")))
	// Only the policies: the Go files of this package are no Rego.
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".go" {
			return os.Remove(path)
		}
		return err
	}))
	other := map[string]any{
		"org": "Another Corp",
		"tenants": map[string]any{"acme": map[string]any{
			"parent": "", "quota": map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 1, "ceiling": 2}},
			"priorityClasses": []any{"batch"}, "scheduler": "kai", "queue": "acme",
		}},
		"priorities":    map[string]any{"batch": map[string]any{"value": 10, "preemptible": true}},
		"classDefaults": map[string]any{"training": "batch", "batch": "batch", "interactive": "batch", "inference": "batch"},
		"quotaPolicy":   map[string]any{"overGuarantee": "deny"},
		"preemption":    map[string]any{"mayPreempt": map[string]any{"batch": []any{}}, "gangsWhole": false},
		"topology":      map[string]any{"name": "flat", "levels": []any{map[string]any{"name": "node", "nodeLabel": "kubernetes.io/hostname"}}, "rules": []any{map[string]any{"required": "node"}}},
		"enforcement":   map[string]any{"quota": "warn"},
	}
	data, err := json.Marshal(other)
	require.NoError(t, err)
	// The organisation's own tests go with its data.
	require.NoError(t, os.Remove(filepath.Join(dir, "mandate", "model", "model_test.rego")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mandate", "model", "data.json"), data, 0o644))
	require.NoError(t, bundles.RunTests(context.Background(), dir))
}
