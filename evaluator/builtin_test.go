package evaluator_test

import (
	"context"
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
