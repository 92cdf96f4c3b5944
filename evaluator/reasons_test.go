package evaluator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
)

// TestDecisionCarriesReasonsAsData: a workload waiting for its tenant's
// ceiling and one that never fits its level: the Decision carries each
// reason's facts, and each warning's reason names the warning it is shown
// as, so no reader needs the text.
func TestDecisionCarriesReasonsAsData(t *testing.T) {
	ev := defaultEvaluator(t)
	snap := fixture(t)

	busy := input("research-vision", 1, 8, map[string]map[string]ledger.Usage{
		"research-vision": {"nvidia.com/gpu": {Total: 60}},
	})
	busy.Cluster = snap
	d, err := ev.Decide(context.Background(), busy)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	var got *evaluator.Violation
	for i := range d.Reasons {
		if d.Reasons[i].Code == "QUOTA_CEILING_BUSY" {
			got = &d.Reasons[i]
		}
	}
	require.NotNil(t, got, "%+v", d.Reasons)
	assert.Equal(t, evaluator.DimensionQuota, got.Dimension)
	assert.Equal(t, evaluator.Facts{Tenant: "research-vision", Resource: "nvidia.com/gpu", Limit: 64, Current: 60, Needs: 8}, got.Facts)
	assert.Contains(t, d.Warnings, got.Warning, "the reason names the warning it is shown as")
	assert.Equal(t, got.Message, got.Warning)

	never := input("research-llm", 5, 8, nil)
	never.Cluster = snap
	d, err = ev.Decide(context.Background(), never)
	require.NoError(t, err)
	require.Len(t, d.Violations, 1)
	v := d.Violations[0]
	assert.Equal(t, "TOPOLOGY_NEVER_FITS", v.Code)
	assert.NotEmpty(t, v.Level)
	assert.NotEmpty(t, v.Domain)
	assert.Equal(t, 5, v.Needs)
	assert.Less(t, v.Limit, v.Needs, "the largest domain holds fewer pods than the gang")
	assert.Empty(t, v.Warning, "a violation is not shown among warnings")
}
