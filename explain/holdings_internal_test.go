package explain

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// holdingsModel counts as the holdings table is written for.
var holdingsModel = model.Model{
	DeviceClasses: map[string]string{topologytest.HoldingDeviceClass: topology.DefaultGPUResource},
	GPUMemoryMiB:  topologytest.HoldingCounting().GPUMemory,
}

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

func heldGPUs(h holders) int {
	n := 0
	for _, p := range h.pods {
		n += p.gpus
	}
	return n
}

// TestHoldersHoldWhatPodsHold: the GPUs explain says a pod holds are the
// whole GPUs of the holdings table (topology.PodUsage), DRA devices and
// time-sliced replicas too; a claim two pods share once.
func TestHoldersHoldWhatPodsHold(t *testing.T) {
	for _, tc := range topologytest.HoldingCases() {
		t.Run(tc.Name, func(t *testing.T) {
			want := 0
			for _, n := range tc.WantWhole {
				want += n
			}
			h := holdersOf(holdingInventory(t, tc.CaseObjects()...), holdingsModel)
			require.Len(t, h.pods, 1)
			require.Equal(t, want, heldGPUs(h))
		})
	}
	pods, claim := topologytest.SharedClaimPods()
	h := holdersOf(holdingInventory(t, pods[0], pods[1], claim), holdingsModel)
	require.Equal(t, 2, heldGPUs(h))
}
