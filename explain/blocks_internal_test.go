package explain

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/evaluator"
)

// TestBlocksComeFromFacts: a block's limit, current value and change are
// rendered from the reason's facts, whatever its message says; a product's
// ceiling names the product.
func TestBlocksComeFromFacts(t *testing.T) {
	h := holders{unhealthy: []sick{
		{name: "b200-0", product: "NVIDIA-B200", gpus: map[string]int{"nvidia.com/gpu": 8}},
		{name: "plain-0", gpus: map[string]int{"nvidia.com/gpu": 4}},
	}}
	e := &Explanation{}
	for _, tc := range []struct {
		name                              string
		v                                 evaluator.Violation
		wantLimit, wantCurrent, wantUnblk string
	}{
		{
			name: "a product's busy ceiling",
			v: evaluator.Violation{Code: "QUOTA_CEILING_BUSY", Dimension: evaluator.DimensionQuota, Message: "anything at all",
				Facts: evaluator.Facts{Tenant: "svc", Resource: "nvidia.com/gpu", Product: "NVIDIA-B200", Limit: 16, Current: 8, Needs: 12}},
			wantLimit: "tenant svc ceiling 16 NVIDIA-B200 nvidia.com/gpu", wantCurrent: "8 in use",
			wantUnblk: "release 4 NVIDIA-B200 nvidia.com/gpu of tenant svc, or raise its ceiling to 20",
		},
		{
			name: "never fits a domain: its own product's nodes to repair",
			v: evaluator.Violation{Code: "TOPOLOGY_NEVER_FITS", Dimension: evaluator.DimensionTopology,
				Facts: evaluator.Facts{Level: "block", Domain: "b1", Resource: "nvidia.com/gpu", Product: "NVIDIA-B200", Limit: 4, Needs: 5}},
			wantUnblk: "ask for at most 4 pods or fewer GPUs per pod; or repair the unhealthy nodes b200-0, plain-0 (12 nvidia.com/gpu out of the fit)",
		},
		{
			name: "no node offers it, no product named: every node to repair",
			v: evaluator.Violation{Code: "TOPOLOGY_NEVER_FITS", Dimension: evaluator.DimensionTopology,
				Facts: evaluator.Facts{Level: "node", Resource: "nvidia.com/gpu", Needs: 1}},
			wantUnblk: "ask for another GPU product or fewer GPUs per pod; or repair the unhealthy nodes b200-0, plain-0 (12 nvidia.com/gpu out of the fit)",
		},
		{
			name: "waits in a named domain, no product: nodes of no product",
			v: evaluator.Violation{Code: "TOPOLOGY_WAITS", Dimension: evaluator.DimensionTopology,
				Facts: evaluator.Facts{Level: "block", Domain: "b1", Resource: "nvidia.com/gpu", Current: 3, Needs: 4}},
			wantUnblk: "free GPUs within one domain of the required level (finish or preempt work there); or repair the unhealthy nodes plain-0 (4 nvidia.com/gpu out of the fit)",
		},
		{
			name:      "a rule of the policy's own",
			v:         evaluator.Violation{Code: "CUSTOM_RULE", Dimension: evaluator.DimensionQuota, Message: "x; do this"},
			wantUnblk: "change what the rule CUSTOM_RULE objects to",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := blockOf(tc.v, map[string]evaluator.Explanation{}, e, h)
			assert.Equal(t, tc.wantLimit, b.Limit)
			assert.Equal(t, tc.wantCurrent, b.Current)
			assert.Equal(t, tc.wantUnblk, b.Unblock)
			assert.Equal(t, tc.v.Message, b.Message, "the message is shown as it is")
		})
	}
}
