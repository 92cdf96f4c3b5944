package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestSyncBadInput: usage errors exit 2 before any cluster is contacted.
func TestSyncBadInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown scheduler", []string{"--kubeconfig", "x", "--schedulers", "slurm"}, `unknown scheduler "slurm"`},
		{"diff and check", []string{"--kubeconfig", "x", "--diff", "--check"}, "exclude each other"},
		{"both model sources", []string{"--kubeconfig", "x", "--policies", "p", "--bundle", "b"}, "at most one"},
		{"bad output", []string{"--kubeconfig", "x", "-o", "yaml"}, "want table or json"},
		{"unreadable kubeconfig", []string{"--kubeconfig", "/nonexistent/kubeconfig"}, "unable to read kubeconfig"},
		{"unknown target", []string{"--target", "lsf"}, `--target "lsf": want kubernetes or slurm`},
		{"unreadable Slurm nodes", []string{"--target", "slurm", "--slurm-nodes", "/nonexistent/nodes.yaml"}, "unable to read --slurm-nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errText := run(t, append([]string{"sync"}, tc.args...)...)
			assert.Equal(t, exitBadInput, code, errText)
			assert.Contains(t, errText, tc.wantErr)
		})
	}
}

// TestSyncRefusesAnUnsoundModel: a model the model checker refuses (an
// unknown parent, a cycle of parents, a guarantee above its ceiling, a
// product guaranteeing more than its resource) is refused with its
// problem, as activation refuses it, before any cluster is contacted.
func TestSyncRefusesAnUnsoundModel(t *testing.T) {
	tenant := func(m map[string]any, name string) map[string]any {
		return m["tenants"].(map[string]any)[name].(map[string]any)
	}
	for _, tc := range []struct {
		name     string
		edit     func(map[string]any)
		wantPath string
	}{
		{"unknown parent", func(m map[string]any) { tenant(m, "platform")["parent"] = "nobody" }, "tenants.platform.parent"},
		{"cycle", func(m map[string]any) { tenant(m, "helix")["parent"] = "research-llm" }, "tenants.helix.parent"},
		{"guarantee above ceiling", func(m map[string]any) {
			tenant(m, "platform")["quota"] = map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 9, "ceiling": 8}}
		}, `tenants.platform.quota["nvidia.com/gpu"].guaranteed`},
		{"products above the resource", func(m map[string]any) {
			tenant(m, "platform")["quota"] = map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 8, "ceiling": 16,
				"products": map[string]any{"NVIDIA-B200": map[string]any{"guaranteed": 9, "ceiling": 16}}}}
		}, `tenants.platform.quota["nvidia.com/gpu"].products`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixtures.PolicyDir(t, tc.edit)
			code, _, errText := run(t, "sync", "--kubeconfig", "x", "--policies", dir)
			assert.Equal(t, exitBadInput, code, errText)
			assert.Contains(t, errText, modelcheck.ErrInvalidModel.Error())
			assert.Contains(t, errText, tc.wantPath)
		})
	}
}
