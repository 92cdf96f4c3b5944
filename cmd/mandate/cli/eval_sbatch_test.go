package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
			script := decide("../../../examples/slurm/" + tc.name + ".sbatch")
			job := decide("../../../examples/slurm/jobs/" + tc.name + ".yaml")
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

// mandate explain sbatch/PATH explains a script as its Job would be
// explained were it in the cluster: the same blocks, dimensions and
// verdict.
func TestExplainSbatchIsTheJobsExplanation(t *testing.T) {
	for _, name := range []string{"ci-matrix", "vision-train", "pretrain"} {
		t.Run(name, func(t *testing.T) {
			cluster, err := os.ReadFile(exampleCluster)
			require.NoError(t, err)
			job, err := os.ReadFile("../../../examples/slurm/jobs/" + name + ".yaml")
			require.NoError(t, err)
			withJob := filepath.Join(t.TempDir(), "cluster.yaml")
			require.NoError(t, os.WriteFile(withJob, append(append(cluster, []byte("\n---\n")...), job...), 0o600))

			explainJSON := func(args ...string) (int, map[string]any) {
				t.Helper()
				code, out, errText := run(t, append([]string{"explain"}, args...)...)
				require.Contains(t, []int{exitAdmitted, exitDenied}, code, errText)
				var e map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &e), out)
				delete(e, "source") // the snapshot files differ by construction
				return code, e
			}
			wantCode, want := explainJSON("job/"+name, "-n", namespaceOf(t, job), "--snapshot", withJob, "-o", "json")
			gotCode, got := explainJSON("sbatch/../../../examples/slurm/"+name+".sbatch", "--snapshot", exampleCluster, "-o", "json")
			assert.Equal(t, wantCode, gotCode)
			assert.Equal(t, want, got)
		})
	}
}

func namespaceOf(t *testing.T, manifest []byte) string {
	t.Helper()
	for _, line := range strings.Split(string(manifest), "\n") {
		if ns, ok := strings.CutPrefix(strings.TrimSpace(line), "namespace: "); ok {
			return ns
		}
	}
	t.Fatal("the manifest names no namespace")
	return ""
}
