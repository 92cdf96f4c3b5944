package topology_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology"
)

func newTestModel(t *testing.T) *topology.Model {
	t.Helper()
	m, err := topology.NewModel(topology.Config{Levels: testLevels})
	require.NoError(t, err)
	return m
}

// TestModelEvents plays one sequence of events and checks the totals, the
// node count and where a 1×4 gang goes after each.
func TestModelEvents(t *testing.T) {
	m := newTestModel(t)
	podA, podB := gpuPod("a", "n1", 4), gpuPod("b", "n2", 2)
	n2Moved := gpuNode("n2", 8, withLabels(map[string]string{"example.com/block": "b2"}))
	for _, tc := range []struct {
		name       string
		event      func()
		wantFree   int
		wantTotal  int
		wantNodes  int
		wantDomain string
	}{
		{name: "pod before its node", event: func() { m.UpsertPod(&podA) }},
		{
			name:     "node arrives, pod counts",
			event:    func() { n := gpuNode("n1", 8); m.UpsertNode(&n) },
			wantFree: 4, wantTotal: 8, wantNodes: 1, wantDomain: "z1/b1/n1",
		},
		{
			name:     "second node",
			event:    func() { n := gpuNode("n2", 8); m.UpsertNode(&n); m.UpsertPod(&podB) },
			wantFree: 10, wantTotal: 16, wantNodes: 2, wantDomain: "z1/b1/n1",
		},
		{
			name:     "pod finishes",
			event:    func() { p := podA; p.Status.Phase = corev1.PodSucceeded; m.UpsertPod(&p) },
			wantFree: 14, wantTotal: 16, wantNodes: 2, wantDomain: "z1/b1/n2",
		},
		{
			name:     "node changes block",
			event:    func() { m.UpsertNode(&n2Moved) },
			wantFree: 14, wantTotal: 16, wantNodes: 2, wantDomain: "z1/b2/n2",
		},
		{
			name:     "node cordoned",
			event:    func() { n := n2Moved; n.Spec.Unschedulable = true; m.UpsertNode(&n) },
			wantFree: 8, wantTotal: 8, wantNodes: 2, wantDomain: "z1/b1/n1",
		},
		{
			name:      "node deleted",
			event:     func() { m.DeleteNode("n1") },
			wantNodes: 1,
		},
		{
			name:     "node back, uncordoned, pod deleted",
			event:    func() { m.UpsertNode(&n2Moved); m.DeletePod("team-a", "b") },
			wantFree: 8, wantTotal: 8, wantNodes: 1, wantDomain: "z1/b2/n2",
		},
		{
			name:      "deleting unknown things is a no-op",
			event:     func() { m.DeleteNode("nope"); m.DeletePod("team-a", "nope"); m.DeleteNode("n2") },
			wantNodes: 0,
		},
	} {
		tc.event()
		snap := m.Snapshot()
		got, err := snap.Place(topology.Request{Pods: 1, GPUsPerPod: 4, RequiredLevel: "node"})
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.wantFree, got.ClusterFree, "%s: free", tc.name)
		require.Equal(t, tc.wantTotal, got.ClusterTotal, "%s: total", tc.name)
		require.Equal(t, tc.wantNodes, snap.NodeCount(), "%s: nodes", tc.name)
		require.Equal(t, tc.wantDomain, got.Domain, "%s: domain", tc.name)
	}
}

func TestSnapshotCachingAndGeneration(t *testing.T) {
	m := newTestModel(t)
	s0 := m.Snapshot()
	require.Same(t, s0, m.Snapshot(), "unchanged model: same snapshot")
	require.Zero(t, s0.Generation())

	n1 := gpuNode("n1", 8)
	m.UpsertNode(&n1)
	s1 := m.Snapshot()
	require.Greater(t, s1.Generation(), s0.Generation())

	// A heartbeat (a condition's timestamp, an unrelated label) and a pod
	// without GPUs change nothing the model keeps.
	hb := gpuNode("n1", 8, withLabels(map[string]string{"example.com/unrelated": "x"}))
	m.UpsertNode(&hb)
	cpu := gpuPod("cpu", "n1", 0, withContainers(container("c", "cpu", 2, true)))
	m.UpsertPod(&cpu)
	require.Same(t, s1, m.Snapshot())

	pod := gpuPod("a", "n1", 8)
	m.UpsertPod(&pod)
	s2 := m.Snapshot()
	require.Greater(t, s2.Generation(), s1.Generation())

	// Older snapshots keep their answers.
	req := topology.Request{Pods: 1, GPUsPerPod: 8, RequiredLevel: "block"}
	r1, err := s1.Place(req)
	require.NoError(t, err)
	r2, err := s2.Place(req)
	require.NoError(t, err)
	require.True(t, r1.FitsNow)
	require.False(t, r2.FitsNow)
	require.Equal(t, []topology.Level(testLevels), s2.Levels())
}

// TestSnapshotConcurrentReaders queries snapshots from several goroutines
// while the model changes (meaningful under -race), and checks each
// snapshot's answer never changes.
func TestSnapshotConcurrentReaders(t *testing.T) {
	m := newTestModel(t)
	for i := range 16 {
		n := gpuNode(nodeName(i), 8, withLabels(map[string]string{"example.com/block": blockName(i % 4)}))
		m.UpsertNode(&n)
	}
	req := topology.Request{Pods: 3, GPUsPerPod: 4, RequiredLevel: "block", PreferredLevel: "node"}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := m.Snapshot()
				first, err := s.Place(req)
				require.NoError(t, err)
				for range 20 {
					again, err := s.Place(req)
					require.NoError(t, err)
					require.Equal(t, first, again)
				}
			}
		})
	}
	for i := range 2000 {
		p := gpuPod(nodeName(i%50), nodeName(i%16), 1+i%8)
		if i%3 == 0 {
			m.DeletePod(p.Namespace, p.Name)
		} else {
			m.UpsertPod(&p)
		}
	}
	close(stop)
	wg.Wait()
}

func nodeName(i int) string  { return "n" + string(rune('a'+i/26)) + string(rune('a'+i%26)) }
func blockName(i int) string { return "b" + string(rune('0'+i)) }
