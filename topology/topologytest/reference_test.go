package topologytest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

func TestReferenceDefaults(t *testing.T) {
	nodes, pods, namespaces := topologytest.Reference(topologytest.RefOptions{})
	require.Len(t, nodes, 12500)
	require.Len(t, namespaces, 1000)
	require.Equal(t, "tenant-0042", namespaces[42].Labels[workload.LabelTenant])

	snap, err := topology.Build(topology.Config{Levels: topologytest.ReferenceLevels()}, nodes, pods)
	require.NoError(t, err)
	require.Equal(t, 12500, snap.NodeCount())
	res, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 1})
	require.NoError(t, err)
	require.Equal(t, 100000, res.ClusterTotal)
	busy := 1 - float64(res.ClusterFree)/float64(res.ClusterTotal)
	require.InDelta(t, 0.6, busy, 0.01, "busy fraction")

	spines := map[string]bool{}
	zones := map[string]bool{}
	b200 := 0
	for _, n := range nodes {
		spines[n.Labels[topologytest.LabelSpineBlock]] = true
		zones[n.Labels[topologytest.LabelZone]] = true
		if n.Labels[topologytest.LabelProduct] == topologytest.ProductB200 {
			b200++
		}
	}
	require.Len(t, spines, 25)
	require.Len(t, zones, 2)
	require.Equal(t, 4*512+212, b200, "every fifth spine is B200, the last one (24) holds the 212 remaining nodes")
}

func TestReferenceDeterministic(t *testing.T) {
	opts := topologytest.RefOptions{NodeCount: 300, Seed: 7, Tenants: 10}
	n1, p1, ns1 := topologytest.Reference(opts)
	n2, p2, ns2 := topologytest.Reference(opts)
	require.Equal(t, n1, n2)
	require.Equal(t, p1, p2)
	require.Equal(t, ns1, ns2)

	_, p3, _ := topologytest.Reference(topologytest.RefOptions{NodeCount: 300, Seed: 8, Tenants: 10})
	require.NotEqual(t, p1, p3, "another seed, other pods")
}

func TestReferenceOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     topologytest.RefOptions
		wantBusy float64
	}{
		{name: "empty", opts: topologytest.RefOptions{NodeCount: 1000, BusyFraction: -1}, wantBusy: 0},
		{name: "full", opts: topologytest.RefOptions{NodeCount: 1000, BusyFraction: 1}, wantBusy: 1},
		{name: "a third", opts: topologytest.RefOptions{NodeCount: 1000, BusyFraction: 0.33}, wantBusy: 0.33},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, pods, _ := topologytest.Reference(tc.opts)
			snap, err := topology.Build(topology.Config{Levels: topologytest.ReferenceLevels()}, nodes, pods)
			require.NoError(t, err)
			res, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 1})
			require.NoError(t, err)
			require.Equal(t, 8000, res.ClusterTotal)
			require.InDelta(t, tc.wantBusy, 1-float64(res.ClusterFree)/float64(res.ClusterTotal), 0.03)
		})
	}
}
