package ledger

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// usedOf is the total usage of tenant's own row, by key.
func usedOf(l *Ledger, tenant string) map[string]int {
	out := map[string]int{}
	for key, u := range l.Usage(tenant)[tenant] {
		if u.Total != 0 {
			out[key] = u.Total
		}
	}
	return out
}

// TestLedgerCountsWhatPodsHold: each way of the holdings table counts its
// whole GPUs against the resource and against its node's product
// (topology.PodHoldings), whichever of pod and claim arrives first.
func TestLedgerCountsWhatPodsHold(t *testing.T) {
	counting := topologytest.HoldingCounting()
	for _, tc := range topologytest.HoldingCases() {
		for _, claimFirst := range []bool{false, true} {
			t.Run(tc.Name, func(t *testing.T) {
				l := New(Config{Parents: map[string]string{"team": ""}, GPUMemory: counting.GPUMemory})
				l.UpsertNamespace(ns(topologytest.HoldingNamespace, "team"))
				l.SetNodeProduct(topologytest.HoldingNode, topologytest.HoldingProduct)
				claims := func() {
					for _, c := range tc.Claims {
						l.UpsertClaim(c.Namespace, c.Name, topology.ClaimGPUs(c, counting.DeviceResource))
					}
				}
				if claimFirst {
					claims()
				}
				l.UpsertPod(tc.Pod)
				if !claimFirst {
					claims()
				}
				want := map[string]int{}
				for res, n := range tc.WantWhole {
					want[res] = n
					want[ProductKey(res, topologytest.HoldingProduct)] = n
				}
				require.Equal(t, want, usedOf(l, "team"))
			})
		}
	}
}

// TestLedgerCountsASharedClaimOnce: the holdings table's shared claim.
func TestLedgerCountsASharedClaimOnce(t *testing.T) {
	counting := topologytest.HoldingCounting()
	l := New(Config{Parents: map[string]string{"team": ""}})
	l.UpsertNamespace(ns(topologytest.HoldingNamespace, "team"))
	pods, claim := topologytest.SharedClaimPods()
	l.UpsertClaim(claim.Namespace, claim.Name, topology.ClaimGPUs(claim, counting.DeviceResource))
	for _, p := range pods {
		l.UpsertPod(p)
	}
	require.Equal(t, map[string]int{"nvidia.com/gpu": 2}, usedOf(l, "team"))
}
