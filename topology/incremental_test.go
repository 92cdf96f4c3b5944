package topology_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology"
)

var incrementalConfig = topology.Config{
	Levels:              testLevels,
	UnhealthyLabel:      "example.com/gpu-unhealthy",
	UnhealthyConditions: []string{"GPUUnhealthy"},
}

// TestIncrementalMatchesBuild plays random node and pod events on a Model and
// checks, every few events, that its snapshot answers random requests
// exactly as Build does from scratch on the same objects; and that a
// snapshot taken earlier still answers as it did then.
func TestIncrementalMatchesBuild(t *testing.T) {
	const sequences, events, every, requests = 300, 80, 8, 12
	rng := rand.New(rand.NewPCG(42, 4242))
	compared := 0
	for seq := range sequences {
		m, err := topology.NewModel(incrementalConfig)
		require.NoError(t, err)
		nodes := map[string]corev1.Node{}
		pods := map[string]corev1.Pod{}
		var old *topology.Snapshot
		var oldReqs []topology.Request
		var oldWant []topology.Result
		for ev := range events {
			randomEvent(rng, m, nodes, pods)
			if ev%every != every-1 {
				continue
			}
			snap := m.Snapshot()
			built, err := topology.Build(incrementalConfig,
				slices.Collect(maps.Values(nodes)), slices.Collect(maps.Values(pods)))
			require.NoError(t, err)
			require.Equal(t, built.NodeCount(), snap.NodeCount(), "sequence %d event %d: node count", seq, ev)
			for range requests {
				req := randomRequest(rng, testLevels)
				want, err := built.Place(req)
				require.NoError(t, err)
				got, err := snap.Place(req)
				require.NoError(t, err)
				require.Equal(t, want, got, "sequence %d event %d: request %s", seq, ev, mustJSON(req))
				compared++
			}
			for i, req := range oldReqs {
				got, err := old.Place(req)
				require.NoError(t, err)
				require.Equal(t, oldWant[i], got, "sequence %d: an older snapshot changed its answer", seq)
			}
			if old == nil || rng.IntN(3) == 0 {
				old, oldReqs, oldWant = snap, nil, nil
				for range requests {
					req := randomRequest(rng, testLevels)
					res, err := snap.Place(req)
					require.NoError(t, err)
					oldReqs, oldWant = append(oldReqs, req), append(oldWant, res)
				}
			}
		}
	}
	t.Logf("compared %d answers of incrementally updated models with Build from scratch (%d sequences of %d events)",
		compared, sequences, events)
}

// randomEvent applies one random event to m and to the objects it mirrors.
func randomEvent(rng *rand.Rand, m *topology.Model, nodes map[string]corev1.Node, pods map[string]corev1.Pod) {
	nodeName := fmt.Sprintf("n%d", rng.IntN(8))
	podName := fmt.Sprintf("p%d", rng.IntN(24))
	switch rng.IntN(10) {
	case 0, 1, 2:
		n := randomNode(rng, nodeName)
		nodes[nodeName] = n
		m.UpsertNode(&n)
	case 3:
		delete(nodes, nodeName)
		m.DeleteNode(nodeName)
	case 4, 5, 6, 7, 8:
		p := randomPod(rng, podName, nodeName)
		pods[podName] = p
		m.UpsertPod(&p)
	default:
		delete(pods, podName)
		m.DeletePod("team-a", podName)
	}
}

func randomNode(rng *rand.Rand, name string) corev1.Node {
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	n := gpuNode(name, rng.IntN(9))
	n.Labels = map[string]string{}
	for k, v := range map[string]string{
		"topology.kubernetes.io/zone": pick("z1", "z2", ""),
		"example.com/block":           pick("b1", "b2", "b3", ""),
		"kubernetes.io/hostname":      pick("", "", "", "h1"),
		"nvidia.com/gpu.product":      pick("p1", "p2", ""),
	} {
		if v != "" {
			n.Labels[k] = v
		}
	}
	if rng.IntN(3) == 0 {
		withAllocatable(refMIG, rng.IntN(8))(&n)
	}
	switch rng.IntN(12) {
	case 0:
		cordoned(&n)
	case 1:
		withTaint("maintenance", corev1.TaintEffectNoExecute)(&n)
	case 2:
		withCondition(corev1.NodeReady, corev1.ConditionUnknown)(&n)
	case 3:
		withCondition("GPUUnhealthy", corev1.ConditionTrue)(&n)
	case 4:
		n.Labels["example.com/gpu-unhealthy"] = pick("true", "false")
	}
	return n
}

func randomPod(rng *rand.Rand, name, node string) corev1.Pod {
	res := "nvidia.com/gpu"
	if rng.IntN(4) == 0 {
		res = refMIG
	}
	p := gpuPod(name, node, 0, withContainers(container("main", res, rng.IntN(5), rng.IntN(2) == 0)))
	if rng.IntN(4) == 0 {
		withInit(container("init", res, rng.IntN(8), false))(&p)
	}
	switch rng.IntN(8) {
	case 0:
		p.Spec.NodeName = ""
	case 1:
		p.Status.Phase = corev1.PodSucceeded
	case 2:
		p.Status.Phase = corev1.PodFailed
	case 3:
		p.Status.Phase = corev1.PodPending
	}
	return p
}
