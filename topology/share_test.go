package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology"
)

// sharedPod is a Running KAI-shared pod bound to node: no GPU resource,
// the sharing annotations given as key, value pairs.
func sharedPod(name, node string, kv ...string) corev1.Pod {
	p := gpuPod(name, node, 0, withContainers(corev1.Container{Name: "main"}))
	p.Annotations = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}

var h100Memory = topology.GPUMemory{"nvidia.com/gpu": {Default: 40960, Products: map[string]int64{"H100": 81920}}}

// Fractional pods of one gang pack onto shared devices: 16 pods at a
// quarter GPU need 4 devices of one node, not 16.
func TestPlaceSharedPodsPackOntoDevices(t *testing.T) {
	snap, err := topology.FromFixture(topology.Fixture{
		Levels: testLevels,
		Nodes: []topology.FixtureNode{{Name: "n1", Labels: map[string]string{"topology.kubernetes.io/zone": "z1", "example.com/block": "b1"},
			Allocatable: map[string]int{"nvidia.com/gpu": 8}, Used: map[string]int{"nvidia.com/gpu": 4}}},
	})
	require.NoError(t, err)

	whole, err := snap.Place(topology.Request{Pods: 16, GPUsPerPod: 1, RequiredLevel: "node"})
	require.NoError(t, err)
	require.False(t, whole.FitsNow, "16 pods on a device each cannot fit 4 free devices")

	got, err := snap.Place(topology.Request{Pods: 16, GPUsPerPod: 1, GPUShareMilli: 250, RequiredLevel: "node"})
	require.NoError(t, err)
	require.Equal(t, topology.Result{FitsNow: true, FitsEmpty: true, Domain: "z1/b1/n1", Level: "node", Score: 1, FreeAfter: 0,
		Largest:     topology.DomainCapacity{Domain: "z1/b1/n1", Level: "node", PodSlots: 32, GPUs: 8},
		BestNow:     topology.DomainCapacity{Domain: "z1/b1/n1", Level: "node", PodSlots: 16, GPUs: 4},
		ClusterFree: 4, ClusterTotal: 8}, got)

	// 17 quarter pods need a fifth device; 0.3 packs 3 per device (floor
	// of 1000/300), so 13 pods need 5 devices.
	for _, tc := range []struct {
		pods, share int
		fits        bool
	}{{17, 250, false}, {12, 300, true}, {13, 300, false}, {8, 500, true}, {9, 500, false}, {4, 1000, true}, {5, 1000, false}} {
		got, err := snap.Place(topology.Request{Pods: tc.pods, GPUsPerPod: 1, GPUShareMilli: tc.share, RequiredLevel: "node"})
		require.NoError(t, err)
		require.Equal(t, tc.fits, got.FitsNow, "%d pods at %d milli", tc.pods, tc.share)
	}

	// A fraction over several devices: two devices per group.
	got, err = snap.Place(topology.Request{Pods: 4, GPUsPerPod: 2, GPUShareMilli: 500, RequiredLevel: "node"})
	require.NoError(t, err)
	require.True(t, got.FitsNow)
	require.Equal(t, 0, got.FreeAfter)
	require.Equal(t, 4, got.BestNow.PodSlots)

	for _, bad := range []int{-1, 1001} {
		_, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 1, GPUShareMilli: bad})
		require.ErrorIs(t, err, topology.ErrInvalidRequest)
	}
}

// The cluster's shared pods occupy ceil(their milli-GPUs on the node /
// 1000) devices of it, not one each; a gpu-memory pod takes its memory's
// share of the node's product's device, or a whole device unmapped.
func TestSharedPodsOccupyPackedDevices(t *testing.T) {
	nodes := []corev1.Node{gpuNode("n1", 8), gpuNode("n2", 8, withLabels(map[string]string{"nvidia.com/gpu.product": "A100"}))}
	pods := []corev1.Pod{
		sharedPod("q1", "n1", topology.AnnotationGPUFraction, "0.25"),
		sharedPod("q2", "n1", topology.AnnotationGPUFraction, "0.25"),
		sharedPod("q3", "n1", topology.AnnotationGPUFraction, "0.25"),
		sharedPod("h1", "n1", topology.AnnotationGPUFraction, "0.5"),
		// 0.5 on each of 2 devices: 1000 milli.
		sharedPod("d1", "n1", topology.AnnotationGPUFraction, "0.5", topology.AnnotationGPUFractionDevices, "2"),
		// H100: 20480 of 81920 MiB is 250 milli; 4 of them make one device.
		sharedPod("m1", "n1", topology.AnnotationGPUMemory, "20480"),
		sharedPod("m2", "n1", topology.AnnotationGPUMemory, "20480"),
		// A100 has no product entry: the default 40960 MiB, 500 milli.
		sharedPod("m3", "n2", topology.AnnotationGPUMemory, "20480"),
		sharedPod("m4", "n2", topology.AnnotationGPUMemory, "20480"),
		sharedPod("m5", "n2", topology.AnnotationGPUMemory, "20480"),
		// Not shared: the annotation does not parse.
		sharedPod("bad", "n2", topology.AnnotationGPUFraction, "1.5"),
	}
	cfg := topology.Config{Levels: testLevels, GPUMemoryMiB: h100Memory}
	snap, err := topology.Build(cfg, nodes, pods)
	require.NoError(t, err)
	// n1: 750 + 500 + 1000 + 500 = 2750 milli: 3 devices, 5 free.
	// n2: 1500 milli: 2 devices, 6 free.
	requireNodeFree(t, snap, map[string]int{"H100": 5, "A100": 6})

	// Without a mapping, every gpu-memory pod takes a whole device:
	// n1 2250 + 2000 milli: 5 devices, 3 free; n2 3 devices, 5 free.
	unmapped, err := topology.Build(topology.Config{Levels: testLevels}, nodes, pods)
	require.NoError(t, err)
	requireNodeFree(t, unmapped, map[string]int{"H100": 3, "A100": 5})

	// A new authority model maps the running pods again.
	m, err := topology.NewModel(topology.Config{Levels: testLevels})
	require.NoError(t, err)
	for i := range nodes {
		m.UpsertNode(&nodes[i])
	}
	for i := range pods {
		m.UpsertPod(&pods[i])
	}
	requireNodeFree(t, m.Snapshot(), map[string]int{"H100": 3, "A100": 5})
	ptrs := []*corev1.Node{&nodes[0], &nodes[1]}
	m2, err := m.Reconfigure(cfg, ptrs)
	require.NoError(t, err)
	requireNodeFree(t, m2.Snapshot(), map[string]int{"H100": 5, "A100": 6})

	// A pod leaving frees its share: n1 drops to 2250 milli, still 3 devices;
	// then h1 leaving makes 1750: 2 devices.
	m2.DeletePod("team-a", "m1")
	requireNodeFree(t, m2.Snapshot(), map[string]int{"H100": 5, "A100": 6})
	m2.DeletePod("team-a", "h1")
	requireNodeFree(t, m2.Snapshot(), map[string]int{"H100": 6, "A100": 6})
}

// requireNodeFree checks each node's free GPUs, by its product (one node
// each): the node fits exactly that many one-GPU pods, not one more.
func requireNodeFree(t *testing.T, snap *topology.Snapshot, want map[string]int) {
	t.Helper()
	total := 0
	for product, free := range want {
		total += free
		fits, err := snap.Place(topology.Request{Pods: free, GPUsPerPod: 1, Product: product, RequiredLevel: "node"})
		require.NoError(t, err)
		require.True(t, fits.FitsNow, "%s node: %d free GPUs", product, free)
		more, err := snap.Place(topology.Request{Pods: free + 1, GPUsPerPod: 1, Product: product, RequiredLevel: "node"})
		require.NoError(t, err)
		require.False(t, more.FitsNow, "%s node: only %d free GPUs", product, free)
	}
	res, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 1})
	require.NoError(t, err)
	require.Equal(t, total, res.ClusterFree, "cluster free GPUs")
}

func TestMemoryMilli(t *testing.T) {
	for _, tc := range []struct {
		mem, dev int64
		want     int
	}{{20480, 81920, 250}, {1, 81920, 1}, {40000, 81920, 489}, {81920, 81920, 1000}, {90000, 81920, 1000}, {10, 0, 1000}} {
		require.Equal(t, tc.want, topology.MemoryMilli(tc.mem, tc.dev), "%d of %d MiB", tc.mem, tc.dev)
	}
	mib, ok := h100Memory.DeviceMiB("nvidia.com/gpu", "H100")
	require.True(t, ok)
	require.EqualValues(t, 81920, mib)
	mib, ok = h100Memory.DeviceMiB("nvidia.com/gpu", "")
	require.True(t, ok)
	require.EqualValues(t, 40960, mib)
	_, ok = topology.GPUMemory{"nvidia.com/gpu": {Products: map[string]int64{"H100": 81920}}}.DeviceMiB("nvidia.com/gpu", "A100")
	require.False(t, ok, "no product entry and no default")
	_, ok = h100Memory.DeviceMiB("amd.com/gpu", "")
	require.False(t, ok)
}

func TestFixtureSharedMilli(t *testing.T) {
	node := func(shared map[string]int) topology.Fixture {
		return topology.Fixture{Levels: testLevels, Nodes: []topology.FixtureNode{{Name: "n1",
			Allocatable: map[string]int{"nvidia.com/gpu": 4}, Used: map[string]int{"nvidia.com/gpu": 2}, SharedMilli: shared}}}
	}
	snap, err := topology.FromFixture(node(map[string]int{"nvidia.com/gpu": 1250}))
	require.NoError(t, err)
	res, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 1})
	require.NoError(t, err)
	require.Equal(t, 0, res.ClusterFree, "2 used and 1250 milli shared occupy all 4 devices")

	_, err = topology.FromFixture(node(map[string]int{"nvidia.com/gpu": 2001}))
	require.ErrorContains(t, err, "occupy 5 devices, more than allocatable 4")
	_, err = topology.FromFixture(node(map[string]int{"nvidia.com/mig-1g.10gb": 500}))
	require.ErrorContains(t, err, "is not nvidia.com/gpu")
}
