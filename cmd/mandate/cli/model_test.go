package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// misspeltQuota is the example model with a misspelt quota key and a tenant
// parent that loops: the "24-GPU job admitted with no quota check"
// and "uses 808 of its 256 ceiling".
func misspeltQuota(model map[string]any) {
	tenants := model["tenants"].(map[string]any)
	tenants["platform"].(map[string]any)["quota"] = map[string]any{"nvidia.com/gpu": map[string]any{"guarenteed": 8, "ceiling": 16}}
	tenants["helix"].(map[string]any)["parent"] = "research-llm"
}

const (
	misspeltPath = `tenants.platform.quota["nvidia.com/gpu"].guarenteed`
	cyclePath    = "tenants.helix.parent"
)

func TestModelCheck(t *testing.T) {
	bad := fixtures.PolicyDir(t, misspeltQuota)
	badBundle := filepath.Join(t.TempDir(), "bad.tar.gz")
	code, _, errText := run(t, "bundle", "build", bad, "-o", badBundle, "--revision", "bad")
	require.Equal(t, 0, code, errText)
	badFile := filepath.Join(bad, "mandate", "model", "data.json")
	yamlFile := filepath.Join(t.TempDir(), "model.yaml")
	require.NoError(t, os.WriteFile(yamlFile, []byte("tenants:\n  acme:\n    parent: nobody\n"), 0o644))

	for _, tc := range []struct {
		name      string
		args      []string
		wantCode  int
		wantOut   []string
		wantError string
	}{
		{name: "the example directory", args: []string{"model", "check", "../../../policies"},
			wantOut: []string{"passes every check"}},
		{name: "the example model file", args: []string{"model", "check", "../../../policies/mandate/model/data.json"},
			wantOut: []string{"passes every check"}},
		{name: "a failing directory", args: []string{"model", "check", bad},
			wantCode: 1, wantOut: []string{misspeltPath, `did you mean "guaranteed"?`, cyclePath, "form a cycle", "problems in the authority model of"}},
		{name: "a failing bundle", args: []string{"model", "check", badBundle},
			wantCode: 1, wantOut: []string{misspeltPath, cyclePath}},
		{name: "a failing model file", args: []string{"model", "check", badFile},
			wantCode: 1, wantOut: []string{misspeltPath, cyclePath}},
		{name: "a failing YAML model", args: []string{"model", "check", yamlFile},
			wantCode: 1, wantOut: []string{"tenants.acme.parent", `parent "nobody" is not a tenant`, "priorities"}},
		{name: "no such path", args: []string{"model", "check", filepath.Join(t.TempDir(), "nope")},
			wantCode: 2, wantError: "no such file"},
		{name: "not a model", args: []string{"model", "check", "model.go"},
			wantCode: 2, wantError: "not JSON or YAML"},
		{name: "bad output", args: []string{"model", "check", "../../../policies", "-o", "yaml"},
			wantCode: 2, wantError: "want table or json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := run(t, tc.args...)
			assert.Equal(t, tc.wantCode, code, "stderr: %s\nstdout: %s", errText, out)
			for _, want := range tc.wantOut {
				assert.Contains(t, out, want)
			}
			assert.Contains(t, errText, tc.wantError)
		})
	}

	t.Run("json", func(t *testing.T) {
		code, out, _ := run(t, "model", "check", bad, "-o", "json")
		require.Equal(t, 1, code)
		var got struct {
			Source   string               `json:"source"`
			Problems []modelcheck.Problem `json:"problems"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		assert.Equal(t, bad, got.Source)
		paths := map[string]string{}
		for _, p := range got.Problems {
			paths[p.Path] = p.Check
		}
		assert.Equal(t, "schema", paths[misspeltPath])
		assert.Equal(t, "hierarchy", paths[cyclePath])
	})
}

func TestBundleBuildTestRefusesAFailingModel(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	code, _, errText := run(t, "bundle", "build", fixtures.PolicyDir(t, misspeltQuota), "-o", out, "--revision", "r1", "--test")
	assert.Equal(t, exitBundleFailed, code)
	assert.Contains(t, errText, "invalid authority model")
	assert.Contains(t, errText, misspeltPath+`: unknown key "guarenteed": did you mean "guaranteed"?`)
	assert.Contains(t, errText, cyclePath+": tenants helix → research-llm → research → helix form a cycle")
	assert.NoFileExists(t, out)
}
