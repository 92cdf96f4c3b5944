package evaluator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestMisspeltPlacementFieldIsRejected: the builtin's result has named
// properties only, so a policy reading one that does not exist fails to
// compile — under `opa check --strict` (a strict compiler) and when an
// evaluator (a bundle activation) compiles it — instead of reading
// undefined at every admission.
func TestMisspeltPlacementFieldIsRejected(t *testing.T) {
	const request = `{"pods": 1, "gpusPerPod": 8, "resource": "nvidia.com/gpu", "product": "", "requiredLevel": "node", "preferredLevel": "", "cluster": null}`
	for _, tc := range []struct {
		name, body, wantErr string
	}{
		{name: "misspelt result field", body: "fits if mandate.placement(" + request + ").fitsnow", wantErr: "fitsnow"},
		{name: "misspelt nested field", body: "slots := mandate.placement(" + request + ").largest.podslots", wantErr: "podslots"},
		{name: "correct fields", body: "fits if mandate.placement(" + request + ").fitsNow\nslots := mandate.placement(" + request + ").largest.podSlots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			module := "package mandate.typo\n\n" + tc.body + "\n"
			parsed, err := ast.ParseModuleWithOpts("typo.rego", module, ast.ParserOptions{RegoVersion: ast.RegoV1})
			require.NoError(t, err)

			strict := ast.NewCompiler().WithStrict(true)
			strict.Compile(map[string]*ast.Module{"typo.rego": parsed})
			p, err := evaluator.LoadFS(policies.FS, "typo")
			require.NoError(t, err)
			p.Modules["typo.rego"] = parsed
			_, evalErr := evaluator.New(context.Background(), p, evaluator.Options{})
			if tc.wantErr == "" {
				assert.False(t, strict.Failed(), "%v", strict.Errors)
				assert.NoError(t, evalErr)
				return
			}
			require.True(t, strict.Failed(), "opa check --strict accepts a misspelt field")
			assert.ErrorContains(t, strict.Errors, tc.wantErr)
			assert.ErrorContains(t, evalErr, tc.wantErr, "the evaluator compiles what a bundle activation compiles")
		})
	}
}

// TestBundleClusterDataIsIgnored: data.mandate.cluster feeds the builtin a
// fixture only under the test registration; a bundle whose data sets it
// does not change a production decision.
func TestBundleClusterDataIsIgnored(t *testing.T) {
	evaluator.UseProductionBuiltins()
	plain := fixtures.Evaluator(t, "plain", nil)
	// A fake cluster of 64 empty 8-GPU nodes in one domain of every level.
	var levels []any
	for _, l := range plain.Model().Topology.Levels {
		levels = append(levels, map[string]any{"name": l.Name, "nodeLabel": l.NodeLabel})
	}
	var nodes []any
	for i := range 64 {
		name := fmt.Sprintf("fake-%d", i)
		labels := map[string]any{}
		for _, l := range plain.Model().Topology.Levels {
			labels[l.NodeLabel] = "fake"
		}
		labels["kubernetes.io/hostname"] = name
		nodes = append(nodes, map[string]any{"name": name, "labels": labels, "allocatable": map[string]any{"nvidia.com/gpu": 8}})
	}
	roomy := map[string]any{"levels": levels, "nodes": nodes}
	p, err := evaluator.LoadFS(policies.FS, "with-cluster-data")
	require.NoError(t, err)
	p.Data["mandate"].(map[string]any)["cluster"] = roomy
	faked, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)

	// A gang of 16 × 8 GPUs on a live cluster of four nodes never fits;
	// the fake cluster in the data would hold it.
	in := fixtures.JobInput("research-llm", 16, 8)
	in.Cluster = fixtureSnapshot(t)
	want, err := plain.Decide(context.Background(), in)
	require.NoError(t, err)
	got, err := faked.Decide(context.Background(), in)
	require.NoError(t, err)
	require.False(t, want.Allowed, "the gang never fits the live cluster")
	assert.Equal(t, want.Allowed, got.Allowed)
	assert.Equal(t, want.Violations, got.Violations)
	assert.Equal(t, want.Warnings, got.Warnings)
	assert.Equal(t, want.Directives, got.Directives)

	// Under the test registration the same data is read: the fixture
	// path is real, and production is what ignores it.
	evaluator.RegisterTestBuiltins()
	t.Cleanup(evaluator.UseProductionBuiltins)
	tested, err := faked.Decide(context.Background(), in)
	require.NoError(t, err)
	assert.NotEqual(t, want.Violations, tested.Violations, "the test registration reads data.mandate.cluster")
}
