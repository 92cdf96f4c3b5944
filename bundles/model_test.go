package bundles_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// failingModel is the example model with two problems neither the Rego
// compiler nor a smoke decision notices: a guarantee above its ceiling and
// an enforcement action that is none.
func failingModel(model map[string]any) {
	tenants := model["tenants"].(map[string]any)
	tenants["platform"].(map[string]any)["quota"] = map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 24, "ceiling": 16}}
	model["enforcement"].(map[string]any)["quota"] = "block"
}

const (
	failingQuotaPath       = `tenants.platform.quota["nvidia.com/gpu"].guaranteed`
	failingEnforcementPath = "enforcement.quota"
)

func TestBuildTestsRefuseAFailingModel(t *testing.T) {
	dir := fixtures.PolicyDir(t, failingModel)
	_, err := bundles.Build(context.Background(), dir, bundles.BuildOptions{Revision: "r", Test: true})
	require.ErrorIs(t, err, modelcheck.ErrInvalidModel)
	var merr *modelcheck.Error
	require.ErrorAs(t, err, &merr)
	var paths []string
	for _, p := range merr.Problems {
		paths = append(paths, p.Path)
	}
	assert.Equal(t, []string{failingEnforcementPath, failingQuotaPath}, paths)
	assert.Contains(t, err.Error(), failingQuotaPath+": tenant platform guarantees 24 nvidia.com/gpu, above its ceiling of 16")

	// Without --test the bundle builds; activation refuses it (below).
	_, err = bundles.Build(context.Background(), dir, bundles.BuildOptions{Revision: "r"})
	require.NoError(t, err)
}

func TestActivatorRejectsAFailingModel(t *testing.T) {
	a := activeR1(t, bundles.ActivatorOptions{}, nil)
	b, err := bundles.Build(context.Background(), fixtures.PolicyDir(t, failingModel), bundles.BuildOptions{Revision: "r2"})
	require.NoError(t, err)
	err = requireRejected(t, a, writeFile(t, t.TempDir(), "r2.tar.gz", b), bundles.StepModel, failingQuotaPath)
	assert.ErrorIs(t, err, modelcheck.ErrInvalidModel)
	assert.Contains(t, err.Error(), failingEnforcementPath, "every problem, not the first")
	assert.Equal(t, bundles.StepModel, a.Status().LastStep)
}

func TestActivatorRejectsAFailingModelOfADirectory(t *testing.T) {
	a := activeR1(t, bundles.ActivatorOptions{}, nil)
	p, err := bundles.LoadDir(context.Background(), fixtures.PolicyDir(t, failingModel), nil)
	require.NoError(t, err)
	err = a.ActivatePolicy(context.Background(), p)
	var aerr *bundles.ActivationError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, bundles.StepModel, aerr.Step)
	assert.Contains(t, err.Error(), failingQuotaPath)
	assert.Equal(t, "r1", a.Current().Revision(), "the previous revision keeps serving")
}

// The schema stays out of every bundle: it describes the data, it is none.
func TestBuildLeavesOutTheSchema(t *testing.T) {
	b, err := bundles.Build(context.Background(), policyDir, bundles.BuildOptions{Revision: "r"})
	require.NoError(t, err)
	assert.NotContains(t, b.Data, "schema")
	model := b.Data["mandate"].(map[string]any)["model"].(map[string]any)
	assert.NotContains(t, model, "properties")
	assert.Empty(t, modelcheck.CheckData(b.Data), "the example model passes")
}
