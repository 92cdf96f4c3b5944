package topology_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/topology"
)

func TestFixtureJSON(t *testing.T) {
	const doc = `{
	  "levels": [{"name": "block", "nodeLabel": "example.com/block"}, {"name": "node", "nodeLabel": "kubernetes.io/hostname"}],
	  "nodes": [
	    {"name": "n1", "labels": {"example.com/block": "b1", "nvidia.com/gpu.product": "H100"},
	     "allocatable": {"nvidia.com/gpu": 8}, "used": {"nvidia.com/gpu": 3}},
	    {"name": "n2", "labels": {"example.com/block": "b1"}, "allocatable": {"nvidia.com/gpu": 8}, "unhealthy": true}
	  ]
	}`
	var f topology.Fixture
	require.NoError(t, json.Unmarshal([]byte(doc), &f))
	snap, err := topology.FromFixture(f)
	require.NoError(t, err)
	require.Equal(t, 2, snap.NodeCount())
	got, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 4, Product: "H100", RequiredLevel: "node"})
	require.NoError(t, err)
	require.Equal(t, topology.Result{FitsNow: true, FitsEmpty: true, Domain: "b1/n1", Level: "node", Score: 0.8, FreeAfter: 1,
		Largest:     topology.DomainCapacity{Domain: "b1/n1", Level: "node", PodSlots: 2, GPUs: 8},
		BestNow:     topology.DomainCapacity{Domain: "b1/n1", Level: "node", PodSlots: 1, GPUs: 5},
		ClusterFree: 5, ClusterTotal: 8}, got)
}

func TestFromFixtureErrors(t *testing.T) {
	levels := []topology.Level{{Name: "node", NodeLabel: "kubernetes.io/hostname"}}
	node := func(mut func(*topology.FixtureNode)) topology.Fixture {
		n := topology.FixtureNode{Name: "n1", Allocatable: map[string]int{"nvidia.com/gpu": 8}}
		mut(&n)
		return topology.Fixture{Levels: levels, Nodes: []topology.FixtureNode{n}}
	}
	for _, tc := range []struct {
		name    string
		fixture topology.Fixture
		wantErr string
	}{
		{"no levels", topology.Fixture{}, "at least one level is required"},
		{"no name", node(func(n *topology.FixtureNode) { n.Name = "" }), "name is empty"},
		{"bad name", node(func(n *topology.FixtureNode) { n.Name = "a/b" }), "not a valid node name"},
		{"duplicate", topology.Fixture{Levels: levels, Nodes: []topology.FixtureNode{{Name: "n1"}, {Name: "n1"}}},
			`nodes 0 and 1 are both named "n1"`},
		{"bad label value", node(func(n *topology.FixtureNode) { n.Labels = map[string]string{"example.com/block": "_"} }),
			`label example.com/block="_"`},
		{"not a GPU resource", node(func(n *topology.FixtureNode) { n.Allocatable["nvidia.com/gpus"] = 8 }),
			`allocatable: "nvidia.com/gpus" is not a GPU resource`},
		{"negative", node(func(n *topology.FixtureNode) { n.Used = map[string]int{"nvidia.com/gpu": -1} }),
			"used[nvidia.com/gpu] is -1"},
		{"overused", node(func(n *topology.FixtureNode) { n.Used = map[string]int{"nvidia.com/gpu": 9} }),
			"used[nvidia.com/gpu] is 9, more than allocatable 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := topology.FromFixture(tc.fixture)
			require.ErrorContains(t, err, "invalid topology fixture")
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
