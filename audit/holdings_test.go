package audit_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

// holdingInventory is an inventory of the holdings table's node, its
// namespace (of tenant product) and the given pods and claims.
func holdingInventory(t *testing.T, objs ...runtime.Object) *inventory.Inventory {
	t.Helper()
	all, err := topologytest.HoldingObjects(map[string]string{workload.LabelTenant: "product"}, objs...)
	require.NoError(t, err)
	inv := &inventory.Inventory{Source: "holdings table"}
	for _, obj := range all {
		require.NoError(t, inv.Add(obj))
	}
	return inv
}

// TestAuditSubtractsWhatPodsHold: each way of the holdings table is taken
// out of the state, and reported, as the whole GPUs it holds
// (topology.PodUsage), DRA devices and time-sliced replicas too.
func TestAuditSubtractsWhatPodsHold(t *testing.T) {
	ev := defaultPolicy(t)
	for _, tc := range topologytest.HoldingCases() {
		t.Run(tc.Name, func(t *testing.T) {
			rep := run(t, holdingInventory(t, tc.CaseObjects()...), ev)
			require.Len(t, rep.Workloads, 1)
			require.Equal(t, audit.Subtracted{Pods: 1, GPUs: tc.WantWhole}, rep.Workloads[0].Subtracted)
		})
	}
}
