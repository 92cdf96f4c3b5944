package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/test/fixtures"
)

// placedPolicies confines research-llm to a pool of one leaf block and
// isolates it at the clique level.
func placedPolicies(t *testing.T, block string) string {
	t.Helper()
	return fixtures.PolicyDir(t, func(model map[string]any) {
		model["topology"].(map[string]any)["pools"] = map[string]any{"dedicated": map[string]any{"level": "block", "domains": []any{block}}}
		llm := model["tenants"].(map[string]any)["research-llm"].(map[string]any)
		llm["placement"] = map[string]any{"allowed": "dedicated", "isolation": "clique"}
	})
}

// TestEvalPlacement: mandate eval injects the pool as a required node
// affinity and the isolation as a pod anti-affinity, names the pool in
// the topology limit, and denies a gang its pool can never hold, naming
// the pool and the rule.
func TestEvalPlacement(t *testing.T) {
	const workload = "../../../examples/workloads/04-llm-finetune-waits.yaml"
	code, out, errText := run(t, "eval", "-f", workload, "--cluster", exampleCluster, "--policies", placedPolicies(t, "b1"), "-o", "yaml")
	require.Equal(t, exitAdmitted, code, errText)
	for _, want := range []string{
		"rule: tenants.research-llm.placement.allowed",
		"- key: mandate.dev/leaf-block\n            operator: In\n            values:\n            - b1",
		"topologyKey: nvidia.com/gpu.clique",
		"one block in pool dedicated (tenants.research-llm.placement.allowed)",
	} {
		require.Contains(t, out, want)
	}

	// b7's two nodes can never hold the gang of 8 pods × 8 GPUs.
	code, out, errText = run(t, "eval", "-f", workload, "--cluster", exampleCluster, "--policies", placedPolicies(t, "b7"))
	require.Equal(t, exitDenied, code, errText)
	require.Contains(t, out, "TOPOLOGY_NEVER_FITS: a gang of 8 pods × 8 nvidia.com/gpu can never be placed: no healthy node of pool dedicated (tenants.research-llm.placement.allowed)")
}

// TestModelCheckPoolsAgainstTheCluster: with --cluster, a pool no node of
// the snapshot is in is a problem; one that has nodes is not.
func TestModelCheckPoolsAgainstTheCluster(t *testing.T) {
	code, out, errText := run(t, "model", "check", placedPolicies(t, "b1"), "--cluster", exampleCluster)
	require.Equal(t, 0, code, out+errText)
	code, out, _ = run(t, "model", "check", placedPolicies(t, "b99"), "--cluster", exampleCluster)
	require.Equal(t, exitModelProblems, code)
	require.Contains(t, out, "no node of the cluster with nvidia.com/gpu is in pool dedicated")
}
