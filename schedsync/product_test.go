package schedsync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/model"
)

// TestProductQuotaBecomesFlavors: tenant product of the example model
// guarantees 128 nvidia.com/gpu (ceiling 160), of which 120 H100 (ceiling
// 144) and 8 B200 (ceiling 32). Kueue gets a flavor per product with its
// share and the any-product flavor with the rest of the guarantee and the
// whole ceiling; Volcano and KAI, which do not tell products apart, get the
// resource's totals.
func TestProductQuotaBecomesFlavors(t *testing.T) {
	s := exampleSpec(t)
	qs := s.Pools("product")
	assert.Equal(t, []model.Pool{
		{Resource: "nvidia.com/gpu", Guaranteed: 0, Ceiling: 160},
		{Resource: "nvidia.com/gpu", Product: "NVIDIA-B200", Guaranteed: 8, Ceiling: 32},
		{Resource: "nvidia.com/gpu", Product: "NVIDIA-H100-80GB-HBM3", Guaranteed: 120, Ceiling: 144},
		{Resource: "nvidia.com/mig-1g.10gb", Guaranteed: 28, Ceiling: 56},
	}, qs)

	objs, err := Render(s, Cluster{}, Options{Schedulers: AllSchedulers()})
	require.NoError(t, err)
	for _, tc := range []struct {
		kind Kind
		name string
		path []string
		want any
	}{
		{VolcanoQueueKind, "product", []string{"spec", "capability", "nvidia.com/gpu"}, "160"},
		{VolcanoQueueKind, "product", []string{"spec", "guarantee", "resource", "nvidia.com/gpu"}, "128"},
		{KAIQueueKind, "product", []string{"spec", "resources", "gpu", "quota"}, int64(128)},
		{KAIQueueKind, "product", []string{"spec", "resources", "gpu", "limit"}, int64(160)},
		{ResourceFlavorKind, "mandate-nvidia-b200", []string{"spec", "nodeLabels"}, map[string]any{"nvidia.com/gpu.product": "NVIDIA-B200"}},
		{ResourceFlavorKind, "mandate-nvidia-h100-80gb-hbm3", []string{"spec", "nodeLabels"}, map[string]any{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
		{ClusterQueueKind, "product", []string{"spec", "resourceGroups"}, []any{map[string]any{
			"coveredResources": []any{"cpu", "ephemeral-storage", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"},
			"flavors": []any{
				map[string]any{"name": "mandate-any-gpu", "resources": append(ungovernedEntries(),
					map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(0), "borrowingLimit": int64(160)},
					map[string]any{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": int64(28), "borrowingLimit": int64(28)})},
				map[string]any{"name": "mandate-nvidia-b200", "resources": append(ungovernedEntries(),
					map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(8), "borrowingLimit": int64(24)},
					map[string]any{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": int64(0), "borrowingLimit": int64(0)})},
				map[string]any{"name": "mandate-nvidia-h100-80gb-hbm3", "resources": append(ungovernedEntries(),
					map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(120), "borrowingLimit": int64(24)},
					map[string]any{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": int64(0), "borrowingLimit": int64(0)})},
			}}}},
		// helix guarantees 320; its children's guarantees, products
		// included, are carved from its any pool: 320 − 128 − 128 − 8.
		{CohortKind, "helix", []string{"spec", "resourceGroups"}, []any{map[string]any{
			"coveredResources": []any{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"},
			"flavors": []any{map[string]any{"name": "mandate-any-gpu", "resources": []any{
				map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(56)},
				map[string]any{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": int64(28)}}}}}}},
	} {
		assert.Equal(t, tc.want, field(t, find(t, objs, tc.kind, "", tc.name), tc.path...), "%s %s %v", tc.kind.GVK.Kind, tc.name, tc.path)
	}
}
