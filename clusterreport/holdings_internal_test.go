package clusterreport

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

func holdingInventory(t *testing.T, objs ...runtime.Object) *inventory.Inventory {
	t.Helper()
	all, err := topologytest.HoldingObjects(nil, objs...)
	require.NoError(t, err)
	inv := &inventory.Inventory{}
	for _, obj := range all {
		require.NoError(t, inv.Add(obj))
	}
	return inv
}

// TestNodesHoldWhatPodsHold: the GPUs the report counts used on a node
// are the whole GPUs of the holdings table (topology.PodUsage), DRA
// devices and time-sliced replicas too; a claim two pods share once.
func TestNodesHoldWhatPodsHold(t *testing.T) {
	m := model.Model{
		Topology:      model.Topology{Levels: []topology.Level{{Name: "node", NodeLabel: "kubernetes.io/hostname"}}},
		DeviceClasses: map[string]string{topologytest.HoldingDeviceClass: topology.DefaultGPUResource},
		GPUMemoryMiB:  topologytest.HoldingCounting().GPUMemory,
	}
	for _, tc := range topologytest.HoldingCases() {
		t.Run(tc.Name, func(t *testing.T) {
			nodes, err := nodesOf(holdingInventory(t, tc.CaseObjects()...), m, nil)
			require.NoError(t, err)
			require.Len(t, nodes, 1)
			require.Equal(t, tc.WantWhole, nodes[0].used)
		})
	}
	pods, claim := topologytest.SharedClaimPods()
	nodes, err := nodesOf(holdingInventory(t, pods[0], pods[1], claim), m, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"nvidia.com/gpu": 2}, nodes[0].used)
}
