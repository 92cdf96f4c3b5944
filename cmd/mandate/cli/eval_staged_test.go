package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/test/fixtures"
)

// stagedPolicies copies the default policies and sets one enforcement entry
// in their data, leaving the Rego untouched.
func stagedPolicies(t *testing.T, key, action string) string {
	t.Helper()
	return fixtures.PolicyDir(t, func(model map[string]any) {
		model["enforcement"].(map[string]any)[key] = action
	})
}

// TestEvalStagedEnforcement evaluates the same workload, a class above its
// tenant's tiers, with PRIORITY_NOT_ALLOWED at each stage.
func TestEvalStagedEnforcement(t *testing.T) {
	const (
		workload = "../../../examples/workloads/06-vision-priority-denied.yaml"
		msg      = "priority class build (100) is above tenant research-vision's tier"
	)
	for _, tc := range []struct {
		stage         string
		wantCode      int
		wantTable     []string
		wantViolation string // the JSON list holding it
	}{
		{"dryrun", exitAdmitted, []string{"MUTATED", "would deny (dryrun): " + msg, "DRYRUN [priority] PRIORITY_NOT_ALLOWED: would deny: " + msg, "priority    dryrun"}, "dryrun"},
		{"warn", exitAdmitted, []string{"MUTATED", "WARN  PRIORITY_NOT_ALLOWED: " + msg, "priority    warn"}, "warned"},
		{"deny", exitDenied, []string{"DENIED", "DENY  [priority] PRIORITY_NOT_ALLOWED: " + msg, "priority    deny"}, "violations"},
	} {
		t.Run(tc.stage, func(t *testing.T) {
			dir := stagedPolicies(t, "PRIORITY_NOT_ALLOWED", tc.stage)
			code, out, errText := run(t, "eval", "-f", workload, "--cluster", exampleCluster, "--policies", dir)
			require.Equal(t, tc.wantCode, code, errText)
			for _, want := range tc.wantTable {
				require.Contains(t, out, want)
			}

			code, out, errText = run(t, "eval", "-f", workload, "--cluster", exampleCluster, "--policies", dir, "-o", "json")
			require.Equal(t, tc.wantCode, code, errText)
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &v))
			for _, list := range []string{"violations", "warned", "dryrun"} {
				got, _ := v[list].([]any)
				if list != tc.wantViolation {
					require.Empty(t, got, list)
					continue
				}
				require.Len(t, got, 1, list)
				vio := got[0].(map[string]any)
				require.Equal(t, "PRIORITY_NOT_ALLOWED", vio["code"])
				require.Equal(t, tc.stage, vio["enforcement"])
			}
		})
	}
}
