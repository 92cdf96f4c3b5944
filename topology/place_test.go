package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/topology"
)

// placeFixture: two spines each with a leaf block named "l1"; spine s1's block
// has two 8-GPU nodes with 8 and 4 free, s2's has one with 6 free; a node
// with no spine label sits in block "_/l9"; an H200 node has no block label.
var placeFixture = topology.Fixture{
	Levels: []topology.Level{
		{Name: "spine", NodeLabel: "example.com/spine"},
		{Name: "block", NodeLabel: "example.com/block"},
		{Name: "node", NodeLabel: "kubernetes.io/hostname"},
	},
	Nodes: []topology.FixtureNode{
		fixtureNode("a1", "s1", "l1", "H100", 8, 0),
		fixtureNode("a2", "s1", "l1", "H100", 8, 4),
		fixtureNode("b1", "s2", "l1", "H100", 8, 2),
		fixtureNode("c1", "", "l9", "H100", 8, 7),
		fixtureNode("d1", "s2", "", "H200", 8, 0),
		{Name: "sick", Labels: map[string]string{"example.com/spine": "s1", "example.com/block": "l1"},
			Allocatable: map[string]int{"nvidia.com/gpu": 8}, Unhealthy: true},
	},
}

func fixtureNode(name, spine, block, product string, gpus, used int) topology.FixtureNode {
	labels := map[string]string{"nvidia.com/gpu.product": product}
	if spine != "" {
		labels["example.com/spine"] = spine
	}
	if block != "" {
		labels["example.com/block"] = block
	}
	return topology.FixtureNode{Name: name, Labels: labels,
		Allocatable: map[string]int{"nvidia.com/gpu": gpus}, Used: map[string]int{"nvidia.com/gpu": used}}
}

func TestPlace(t *testing.T) {
	snap, err := topology.FromFixture(placeFixture)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		req  topology.Request
		want topology.Result
	}{
		{
			name: "best fit block: the fewest free GPUs that hold the gang",
			req:  topology.Request{Pods: 1, GPUsPerPod: 4, Product: "H100", RequiredLevel: "block"},
			want: topology.Result{FitsNow: true, FitsEmpty: true, Domain: "s2/l1", Level: "block", Score: 4.0 / 6, FreeAfter: 2,
				Largest:     topology.DomainCapacity{Domain: "s1/l1", Level: "block", PodSlots: 4, GPUs: 16},
				BestNow:     topology.DomainCapacity{Domain: "s1/l1", Level: "block", PodSlots: 3, GPUs: 12},
				ClusterFree: 19, ClusterTotal: 32},
		},
		{
			name: "missing ancestor: block _/l9",
			req:  topology.Request{Pods: 1, GPUsPerPod: 1, Product: "H100", RequiredLevel: "block"},
			want: topology.Result{FitsNow: true, FitsEmpty: true, Domain: "_/l9", Level: "block", Score: 1, FreeAfter: 0,
				Largest:     topology.DomainCapacity{Domain: "s1/l1", Level: "block", PodSlots: 16, GPUs: 16},
				BestNow:     topology.DomainCapacity{Domain: "s1/l1", Level: "block", PodSlots: 12, GPUs: 12},
				ClusterFree: 19, ClusterTotal: 32},
		},
		{
			name: "preferred node level inside the required spine",
			req:  topology.Request{Pods: 1, GPUsPerPod: 4, Product: "H100", RequiredLevel: "spine", PreferredLevel: "node"},
			want: topology.Result{FitsNow: true, FitsEmpty: true, Domain: "s1/l1/a2", Level: "node", Score: 1, FreeAfter: 0,
				Largest:     topology.DomainCapacity{Domain: "s1", Level: "spine", PodSlots: 4, GPUs: 16},
				BestNow:     topology.DomainCapacity{Domain: "s1", Level: "spine", PodSlots: 3, GPUs: 12},
				ClusterFree: 19, ClusterTotal: 32},
		},
		{
			name: "preferred level does not fit: required level",
			req:  topology.Request{Pods: 2, GPUsPerPod: 6, Product: "H100", RequiredLevel: "spine", PreferredLevel: "block"},
			want: topology.Result{FitsNow: false, FitsEmpty: true,
				Largest:     topology.DomainCapacity{Domain: "s1", Level: "spine", PodSlots: 2, GPUs: 16},
				BestNow:     topology.DomainCapacity{Domain: "s1", Level: "spine", PodSlots: 1, GPUs: 12},
				ClusterFree: 19, ClusterTotal: 32},
		},
		{
			name: "whole cluster, any product",
			req:  topology.Request{Pods: 2, GPUsPerPod: 8},
			want: topology.Result{FitsNow: true, FitsEmpty: true, Domain: "cluster", Score: 16.0 / 27, FreeAfter: 11,
				Largest:     topology.DomainCapacity{Domain: "cluster", PodSlots: 5, GPUs: 40},
				BestNow:     topology.DomainCapacity{Domain: "cluster", PodSlots: 2, GPUs: 27},
				ClusterFree: 27, ClusterTotal: 40},
		},
		{
			name: "preferred node within the whole cluster",
			req:  topology.Request{Pods: 1, GPUsPerPod: 8, PreferredLevel: "node"},
			want: topology.Result{FitsNow: true, FitsEmpty: true, Domain: "s1/l1/a1", Level: "node", Score: 1, FreeAfter: 0,
				Largest:     topology.DomainCapacity{Domain: "cluster", PodSlots: 5, GPUs: 40},
				BestNow:     topology.DomainCapacity{Domain: "cluster", PodSlots: 2, GPUs: 27},
				ClusterFree: 27, ClusterTotal: 40},
		},
		{
			name: "never fits: too big for any block",
			req:  topology.Request{Pods: 3, GPUsPerPod: 8, RequiredLevel: "block"},
			want: topology.Result{
				Largest:     topology.DomainCapacity{Domain: "s1/l1", Level: "block", PodSlots: 2, GPUs: 16},
				BestNow:     topology.DomainCapacity{Domain: "s1/l1", Level: "block", PodSlots: 1, GPUs: 12},
				ClusterFree: 27, ClusterTotal: 40},
		},
		{
			name: "unknown product",
			req:  topology.Request{Pods: 1, GPUsPerPod: 1, Product: "MI300X"},
		},
		{
			name: "CPU-only gang",
			req:  topology.Request{Pods: 4, GPUsPerPod: 0, RequiredLevel: "block"},
			want: topology.Result{FitsNow: true, FitsEmpty: true, Score: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := snap.Place(tc.req)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestPlaceErrors(t *testing.T) {
	snap, err := topology.FromFixture(placeFixture)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		req     topology.Request
		wantErr string
	}{
		{"no pods", topology.Request{Pods: 0, GPUsPerPod: 1}, "pods is 0, want at least 1"},
		{"negative GPUs", topology.Request{Pods: 1, GPUsPerPod: -1}, "gpusPerPod is -1"},
		{"unknown required level", topology.Request{Pods: 1, GPUsPerPod: 1, RequiredLevel: "rack"},
			`unknown requiredLevel "rack" (levels: spine, block, node)`},
		{"unknown preferred level", topology.Request{Pods: 1, GPUsPerPod: 1, PreferredLevel: "rack"},
			`unknown preferredLevel "rack"`},
		{"preferred wider than required", topology.Request{Pods: 1, GPUsPerPod: 1, RequiredLevel: "block", PreferredLevel: "spine"},
			`preferredLevel "spine" is wider than requiredLevel "block"`},
		{"not a GPU resource", topology.Request{Pods: 1, GPUsPerPod: 1, Resource: "cpu"},
			`resource "cpu" is not a GPU resource`},
		{"overflow", topology.Request{Pods: 1 << 62, GPUsPerPod: 8}, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := snap.Place(tc.req)
			require.ErrorIs(t, err, topology.ErrInvalidRequest)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
