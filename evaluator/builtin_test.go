package evaluator_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
)

func query(t *testing.T, ctx context.Context, q string) (any, bool, error) {
	t.Helper()
	rs, err := rego.New(rego.Query(q), rego.StrictBuiltinErrors(true)).Eval(ctx)
	if err != nil || len(rs) == 0 {
		return nil, false, err
	}
	return rs[0].Expressions[0].Value, true, nil
}

const fixtureCluster = `{"levels": [{"name": "node", "nodeLabel": "kubernetes.io/hostname"}],
	"nodes": [{"name": "a", "allocatable": {"nvidia.com/gpu": 8}, "used": {"nvidia.com/gpu": 6}},
	          {"name": "b", "allocatable": {"nvidia.com/gpu": 8}}]}`

func TestPlacementBuiltin(t *testing.T) {
	evaluator.RegisterTestBuiltins()
	t.Cleanup(evaluator.UseProductionBuiltins)
	for _, tc := range []struct {
		name, request string
		ctx           bool
		wantDefined   bool
		wantDomain    string
		wantErr       string
	}{
		{name: "fixture, best fit", request: `{"pods": 1, "gpusPerPod": 2, "resource": "nvidia.com/gpu", "requiredLevel": "node", "cluster": ` + fixtureCluster + `}`, wantDefined: true, wantDomain: "a"},
		{name: "fixture, needs the empty node", request: `{"pods": 1, "gpusPerPod": 4, "resource": "nvidia.com/gpu", "requiredLevel": "node", "cluster": ` + fixtureCluster + `}`, wantDefined: true, wantDomain: "b"},
		{name: "live snapshot", request: `{"pods": 1, "gpusPerPod": 8, "resource": "nvidia.com/gpu", "requiredLevel": "node", "cluster": null}`, ctx: true, wantDefined: true, wantDomain: "zone-a/s1/b1/c1/h2"},
		{name: "no snapshot is undefined", request: `{"pods": 1, "gpusPerPod": 8, "resource": "nvidia.com/gpu", "cluster": null}`},
		{name: "unknown level", request: `{"pods": 1, "gpusPerPod": 8, "resource": "nvidia.com/gpu", "requiredLevel": "rack", "cluster": ` + fixtureCluster + `}`, wantErr: "rack"},
		{name: "pods not a number is a type error", request: `{"pods": "one", "gpusPerPod": 8, "resource": "nvidia.com/gpu"}`, wantErr: "invalid argument(s)"},
		{name: "fractional pods", request: `{"pods": 1.5, "gpusPerPod": 8, "resource": "nvidia.com/gpu"}`, wantErr: "whole number"},
		{name: "malformed fixture", request: `{"pods": 1, "gpusPerPod": 8, "resource": "nvidia.com/gpu", "cluster": {"nodes": 3}}`, wantErr: "cluster fixture is malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctx {
				ctx = evaluator.ContextWithSnapshot(ctx, fixtureSnapshot(t))
			}
			got, defined, err := query(t, ctx, "mandate.placement("+tc.request+")")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantDefined, defined)
			if defined {
				require.Equal(t, tc.wantDomain, got.(map[string]any)["domain"])
				require.Equal(t, true, got.(map[string]any)["fitsNow"])
			}
		})
	}
}

// TestPlacementBuiltinSharedPods: gpuShareMilli packs a gang's pods onto
// shared devices (16 quarter-GPU pods on one node's 4 free GPUs), and a
// fixture's sharedMilli occupies ceil(milli/1000) devices.
func TestPlacementBuiltinSharedPods(t *testing.T) {
	evaluator.RegisterTestBuiltins()
	t.Cleanup(evaluator.UseProductionBuiltins)
	const cluster = `{"levels": [{"name": "node", "nodeLabel": "kubernetes.io/hostname"}],
		"nodes": [{"name": "a", "allocatable": {"nvidia.com/gpu": 8}, "used": {"nvidia.com/gpu": 3}, "sharedMilli": {"nvidia.com/gpu": 750}}]}`
	place := func(extra string) map[string]any {
		t.Helper()
		got, defined, err := query(t, context.Background(), `mandate.placement({"pods": 16, "gpusPerPod": 1, "resource": "nvidia.com/gpu", "requiredLevel": "node", "cluster": `+cluster+extra+`})`)
		require.NoError(t, err)
		require.True(t, defined)
		return got.(map[string]any)
	}
	whole := place("")
	require.Equal(t, false, whole["fitsNow"], "16 pods on a device each do not fit 4 free GPUs")
	shared := place(`, "gpuShareMilli": 250`)
	require.Equal(t, true, shared["fitsNow"])
	require.Equal(t, "a", shared["domain"])
	require.Equal(t, map[string]any{"domain": "a", "level": "node", "podSlots": json.Number("16"), "gpus": json.Number("4")}, shared["bestNow"])
	require.Equal(t, json.Number("0"), shared["freeAfter"])

	_, _, err := query(t, context.Background(), `mandate.placement({"pods": 1, "gpusPerPod": 1, "resource": "nvidia.com/gpu", "gpuShareMilli": 2000, "cluster": `+cluster+`})`)
	require.ErrorContains(t, err, "gpuShareMilli is 2000")
	_, _, err = query(t, context.Background(), `mandate.placement({"pods": 1, "gpusPerPod": 1, "resource": "nvidia.com/gpu", "gpuShareMilli": 0.25, "cluster": `+cluster+`})`)
	require.ErrorContains(t, err, "request.gpuShareMilli must be a whole number")
}
