package topology_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/topology"
)

// A pool confines every answer to its nodes: the best fit, the largest
// domain (never-fits) and the cluster totals; a pool no node matches
// holds nothing. Nodes whose labels change move in and out of the pool.
func TestPlaceWithinAPool(t *testing.T) {
	cfg := topology.Config{
		Levels: []topology.Level{{Name: "block", NodeLabel: "example.com/block"}, {Name: "node", NodeLabel: "kubernetes.io/hostname"}},
		Pools: map[string]topology.PoolSelector{
			"b1":    {"example.com/block": {"b1"}},
			"ghost": {"example.com/pool": {"ghost"}},
		},
	}
	m, err := topology.NewModel(cfg)
	require.NoError(t, err)
	for _, n := range []struct {
		name, block string
	}{{"a1", "b1"}, {"a2", "b1"}, {"c1", "b2"}, {"c2", "b2"}, {"c3", "b2"}} {
		node := gpuNode(n.name, 8, withLabels(map[string]string{"example.com/block": n.block}))
		m.UpsertNode(&node)
	}
	place := func(pods int, pool string) topology.Result {
		t.Helper()
		res, err := m.Snapshot().Place(topology.Request{Pods: pods, GPUsPerPod: 8, RequiredLevel: "block", Pool: pool})
		require.NoError(t, err)
		return res
	}

	// Three whole nodes fit b2 only: anywhere they fit, in b1 never.
	assert.True(t, place(3, "").FitsEmpty)
	assert.Equal(t, "b2", place(3, "").Domain)
	in := place(3, "b1")
	assert.False(t, in.FitsEmpty)
	assert.Equal(t, topology.DomainCapacity{Domain: "b1", Level: "block", PodSlots: 2, GPUs: 16}, in.Largest)
	assert.Equal(t, 16, in.ClusterTotal)
	// Two fit b1, and are placed there, not in the emptier b2.
	two := place(2, "b1")
	assert.True(t, two.FitsNow)
	assert.Equal(t, "b1", two.Domain)

	assert.Equal(t, topology.Result{}, place(1, "ghost"))

	// c1 joins b1: b1 now holds three.
	moved := gpuNode("c1", 8, withLabels(map[string]string{"example.com/block": "b1"}))
	m.UpsertNode(&moved)
	assert.True(t, place(3, "b1").FitsEmpty)
}
