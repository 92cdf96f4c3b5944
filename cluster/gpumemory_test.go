package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/topology"
)

// TestSetModelMapsGPUMemory: a revision that gives the device memory
// (gpuMemoryMiB) recounts the running gpu-memory pods as their share, in
// the ledger and in the cluster model, and one that drops it counts whole
// devices again.
func TestSetModelMapsGPUMemory(t *testing.T) {
	m := defaultModel(t)
	s, err := New(m)
	require.NoError(t, err)
	require.NoError(t, s.LoadFile("../examples/cluster.yaml"))
	freeBefore := clusterFree(t, s)
	usedBefore := s.Usage("product")["product"]["nvidia.com/gpu"].Total
	for _, name := range []string{"m0", "m1", "m2", "m3"} {
		s.UpsertPod(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "product", Annotations: map[string]string{"gpu-memory": "20480"}},
			Spec:       corev1.PodSpec{NodeName: "h100-b4-7", Containers: []corev1.Container{{Name: "c"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	assert.Equal(t, usedBefore+4, s.Usage("product")["product"]["nvidia.com/gpu"].Total, "unmapped: a whole device each")
	assert.Equal(t, freeBefore-4, clusterFree(t, s))

	mapped := m
	mapped.GPUMemoryMiB = topology.GPUMemory{"nvidia.com/gpu": {Default: 81920}}
	require.NoError(t, s.SetModel(mapped))
	assert.Equal(t, usedBefore+1, s.Usage("product")["product"]["nvidia.com/gpu"].Total, "4 × 20 GiB of 80 GiB: one GPU")
	assert.Equal(t, freeBefore-1, clusterFree(t, s), "the 4 pods pack onto one device")

	require.NoError(t, s.SetModel(m))
	assert.Equal(t, usedBefore+4, s.Usage("product")["product"]["nvidia.com/gpu"].Total)
	assert.Equal(t, freeBefore-4, clusterFree(t, s))
}

func clusterFree(t *testing.T, s *State) int {
	t.Helper()
	res, err := s.Snapshot().Place(topology.Request{Pods: 1, GPUsPerPod: 1})
	require.NoError(t, err)
	return res.ClusterFree
}
