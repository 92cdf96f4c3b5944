package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShortfall: when no domain has room for one pod, Shortfall names the
// domains considered and the freest of them, never an empty one unless
// nothing is free at all.
func TestShortfall(t *testing.T) {
	levels := []Level{{Name: "block", NodeLabel: "block"}, {Name: "node", NodeLabel: "kubernetes.io/hostname"}}
	node := func(name, block string, used int) FixtureNode {
		return FixtureNode{Name: name, Labels: map[string]string{"block": block},
			Allocatable: map[string]int{"nvidia.com/gpu": 8}, Used: map[string]int{"nvidia.com/gpu": used}}
	}
	for _, tc := range []struct {
		name  string
		nodes []FixtureNode
		req   Request
		want  Shortfall
	}{
		{
			name:  "fragmented blocks",
			nodes: []FixtureNode{node("a1", "a", 4), node("a2", "a", 6), node("b1", "b", 2), node("b2", "b", 7)},
			req:   Request{Pods: 1, GPUsPerPod: 8, RequiredLevel: "block"},
			want:  Shortfall{Level: "block", Domains: 2, Freest: "b", FreestGPUs: 7, FreestNodeGPUs: 6},
		},
		{
			name:  "ties go to the smaller key",
			nodes: []FixtureNode{node("a1", "a", 4), node("b1", "b", 4)},
			req:   Request{Pods: 1, GPUsPerPod: 8, RequiredLevel: "node"},
			want:  Shortfall{Level: "node", Domains: 2, Freest: "a/a1", FreestGPUs: 4, FreestNodeGPUs: 4},
		},
		{
			name:  "nothing free",
			nodes: []FixtureNode{node("a1", "a", 8), node("b1", "b", 8)},
			req:   Request{Pods: 1, GPUsPerPod: 8, RequiredLevel: "block"},
			want:  Shortfall{Level: "block", Domains: 2},
		},
		{
			name:  "whole cluster",
			nodes: []FixtureNode{node("a1", "a", 4), node("b1", "b", 5)},
			req:   Request{Pods: 1, GPUsPerPod: 8},
			want:  Shortfall{Domains: 1, Freest: ClusterDomain, FreestGPUs: 7, FreestNodeGPUs: 4},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := FromFixture(Fixture{Levels: levels, Nodes: tc.nodes})
			require.NoError(t, err)
			res, err := snap.Place(tc.req)
			require.NoError(t, err)
			require.Zero(t, res.BestNow.PodSlots, "the case must leave no room for one pod")
			got, err := snap.Shortfall(tc.req)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
