package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

// holdingModel is an authority model counting as the holdings table is
// written for (topologytest.HoldingCounting).
func holdingModel() model.Model {
	return model.Model{
		Tenants:       map[string]model.Tenant{"team": {}},
		Topology:      model.Topology{Levels: []topology.Level{{Name: "node", NodeLabel: "kubernetes.io/hostname"}}},
		DeviceClasses: map[string]string{topologytest.HoldingDeviceClass: topology.DefaultGPUResource},
		GPUMemoryMiB:  topologytest.HoldingCounting().GPUMemory,
	}
}

// TestStateCountsWhatPodsHold: each way of the holdings table, with its
// pod stored as serve's informers store it (PodFacts), counts its whole
// GPUs in the tenant's usage (per resource and per its node's product)
// and takes them of its node, whichever of pod and claim comes first.
func TestStateCountsWhatPodsHold(t *testing.T) {
	for _, tc := range topologytest.HoldingCases() {
		for _, claimFirst := range []bool{false, true} {
			t.Run(tc.Name, func(t *testing.T) {
				s, err := New(holdingModel())
				require.NoError(t, err)
				s.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: topologytest.HoldingNamespace,
					Labels: map[string]string{workload.LabelTenant: "team"}}})
				s.UpsertNode(topologytest.HoldingNodeObject())
				if claimFirst {
					for _, c := range tc.Claims {
						s.UpsertClaim(c)
					}
				}
				s.UpsertPod(StripPod(tc.Pod))
				if !claimFirst {
					for _, c := range tc.Claims {
						s.UpsertClaim(c)
					}
				}
				want := map[string]ledger.Usage{}
				for res, n := range tc.WantWhole {
					want[res] = ledger.Usage{Total: n, NonPreemptible: n}
					want[topology.ProductKey(res, topologytest.HoldingProduct)] = ledger.Usage{Total: n, NonPreemptible: n}
				}
				require.Equal(t, want, s.Usage("team")["team"])
				for _, res := range []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"} {
					got, err := s.Snapshot().Place(topology.Request{Pods: 1, GPUsPerPod: 1, Resource: res})
					require.NoError(t, err)
					require.Equal(t, topologytest.HoldingAllocatable-tc.WantWhole[res], got.ClusterFree, res)
				}
				// Its holdings read back as the state counts them.
				h := topology.PodUsage(tc.Pod, "", holdingModel().Counting(), s.ClaimLookup())
				require.Equal(t, tc.Want, h.GPUs)
			})
		}
	}
}
