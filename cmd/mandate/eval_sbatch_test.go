package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each sbatch script of examples/slurm is decided exactly as the
// Kubernetes Job it is equivalent to (examples/slurm/jobs): the same
// verdict, violations, messages, explanation and directives.
func TestSbatchScriptsAreDecidedAsTheirJobs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		wantAllowed   bool
		wantDimension string
	}{
		{name: "vision-train", wantAllowed: true},
		{name: "finetune-b200", wantAllowed: true},
		{name: "vision-urgent", wantDimension: "priority"},
		{name: "ci-matrix", wantDimension: "quota"},
		{name: "pretrain", wantDimension: "topology"},
		{name: "scratch", wantDimension: "tenancy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decide := func(file string) map[string]any {
				t.Helper()
				code, out, errOut := run(t, "eval", "-f", file, "--cluster", exampleCluster, "-o", "json")
				require.Contains(t, []int{exitAdmitted, exitDenied}, code, errOut)
				var item map[string]any // one workload: one object
				require.NoError(t, json.Unmarshal([]byte(out), &item), out)
				// The file decided and the decision's id (a hash of the
				// whole request) differ by construction.
				delete(item, "source")
				delete(item, "decisionId")
				return item
			}
			script := decide("../../examples/slurm/" + tc.name + ".sbatch")
			job := decide("../../examples/slurm/jobs/" + tc.name + ".yaml")
			assert.Equal(t, job, script)
			assert.Equal(t, tc.wantAllowed, script["allowed"], "allowed")
			if tc.wantDimension != "" {
				violations, _ := script["violations"].([]any)
				require.NotEmpty(t, violations)
				assert.Equal(t, tc.wantDimension, violations[0].(map[string]any)["dimension"])
			}
		})
	}
}
