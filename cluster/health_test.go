package cluster

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology"
)

// TestHealthGating: the model's health rules reach placement. A node
// labelled nvidia.com/gpu.health=unhealthy, or with a True
// GPUThermalThrottling condition, leaves the fit; "healthy" does not; a
// model with another health label reshapes the state and brings it back.
func TestHealthGating(t *testing.T) {
	m := defaultModel(t)
	require.Equal(t, "nvidia.com/gpu.health", m.Topology.Health.Label, "the default model gates on GPU health")
	s, err := New(m)
	require.NoError(t, err)
	require.NoError(t, s.LoadFile("../examples/cluster.yaml"))
	// A node with 8 free GPUs: where an 8-GPU pod fits best.
	req := topology.Request{Pods: 1, GPUsPerPod: 8, Resource: "nvidia.com/gpu", RequiredLevel: "node"}
	best, err := s.Snapshot().Place(req)
	require.NoError(t, err)
	require.True(t, best.FitsNow)
	var node *corev1.Node
	for _, n := range s.Nodes() {
		if strings.HasSuffix(best.Domain, "/"+n.Name) {
			node = n
		}
	}
	require.NotNil(t, node, best.Domain)
	free := func() int {
		t.Helper()
		r, err := s.Snapshot().Place(req)
		require.NoError(t, err)
		return r.ClusterFree
	}
	nodeFree := func() bool {
		t.Helper()
		for _, n := range s.Nodes() {
			if n.Name == node.Name {
				return topology.ViewNode(s.TopologyConfig(), n).Usable
			}
		}
		t.Fatalf("node %s is gone", node.Name)
		return false
	}
	before := free()
	gpus := topology.NodeGPUs(node)["nvidia.com/gpu"]
	require.Positive(t, gpus)

	for _, tc := range []struct {
		name          string
		label         string
		condition     corev1.NodeConditionType
		wantUsable    bool
		wantUnhealthy bool
	}{
		{name: "healthy label", label: "healthy", wantUsable: true},
		{name: "unhealthy label", label: "unhealthy", wantUnhealthy: true},
		{name: "thermal throttling", condition: "GPUThermalThrottling", wantUnhealthy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node.DeepCopy()
			if tc.label != "" {
				n.Labels["nvidia.com/gpu.health"] = tc.label
			}
			if tc.condition != "" {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: tc.condition, Status: corev1.ConditionTrue})
			}
			s.UpsertNode(n)
			view := topology.ViewNode(s.TopologyConfig(), n)
			assert.Equal(t, tc.wantUsable, view.Usable)
			assert.Equal(t, tc.wantUnhealthy, view.Unhealthy)
			assert.Equal(t, tc.wantUsable, nodeFree())
			if tc.wantUsable {
				assert.Equal(t, before, free())
			} else {
				assert.Equal(t, before-8, free(), "the node's free GPUs leave the cluster's free capacity")
			}
		})
	}

	sick := node.DeepCopy()
	sick.Labels["nvidia.com/gpu.health"] = "unhealthy"
	s.UpsertNode(sick)
	require.Equal(t, before-8, free())
	next := m
	next.Topology.Health.Label = "example.com/gpu-broken"
	require.NoError(t, s.SetModel(next))
	assert.Equal(t, before, free(), "with another health label the node is back in the fit")
	assert.True(t, nodeFree())
}
