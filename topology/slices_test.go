package topology_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

func nvidiaClasses(class string) (string, bool) {
	if class == topologytest.NvidiaDriver {
		return "nvidia.com/gpu", true
	}
	return "", false
}

// TestDeviceCounterCount: a node's devices count by the DeviceClass whose
// CEL selectors match them (a NIC of the same driver, or a device of
// another type, does not); tainted ones apart; the product from the
// productName attribute in the label's spelling; an older generation of
// a pool not at all.
func TestDeviceCounterCount(t *testing.T) {
	dc, err := topology.NewDeviceCounter([]*resourcev1.DeviceClass{topologytest.GPUDeviceClass()}, nvidiaClasses)
	require.NoError(t, err)
	s := topologytest.GPUSlice("n1", 8, "NVIDIA H100 80GB HBM3")
	s.Spec.Devices[7].Attributes["type"] = resourcev1.DeviceAttribute{StringValue: ptr.To("nic")}
	s.Spec.Devices[6].Taints = []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
	s.Spec.Devices[5].Taints = []resourcev1.DeviceTaint{{Key: "note", Effect: resourcev1.DeviceTaintEffectNone}}
	old := topologytest.GPUSlice("n1", 4, "NVIDIA A100")
	old.Name, old.Spec.Pool.Generation, s.Spec.Pool.Generation = "old", 1, 2
	got := dc.Count(context.Background(), []*resourcev1.ResourceSlice{s, old})
	want := topology.NodeDevices{GPUs: map[string]int{"nvidia.com/gpu": 6}, Tainted: map[string]int{"nvidia.com/gpu": 1}, Taints: []string{"gpu.nvidia.com/xid:NoSchedule"}, Product: "NVIDIA-H100-80GB-HBM3"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Count (-want +got):\n%s", d)
	}

	broken := topologytest.GPUDeviceClass()
	broken.Name = "broken"
	broken.Spec.Selectors[0].CEL.Expression = "device.nope("
	_, err = topology.NewDeviceCounter([]*resourcev1.DeviceClass{broken}, func(string) (string, bool) { return "nvidia.com/gpu", true })
	require.ErrorContains(t, err, "DeviceClass broken")
}

// TestModelNodeDevices: a node's DRA devices are its capacity as
// allocatable GPUs are, before or after the node arrives, and name its
// product when its labels do not; gone with the slices.
func TestModelNodeDevices(t *testing.T) {
	m := newTestModel(t)
	devices := topology.NodeDevices{GPUs: map[string]int{"nvidia.com/gpu": 8}, Product: "GB200"}
	m.SetNodeDevices("n1", devices)
	n1 := gpuNode("n1", 0, withoutLabel("nvidia.com/gpu.product"))
	delete(n1.Status.Allocatable, "nvidia.com/gpu")
	m.UpsertNode(&n1)
	n2 := gpuNode("n2", 8)
	m.UpsertNode(&n2)
	pod := gpuPod("a", "n2", 8)
	m.UpsertPod(&pod)
	for _, tc := range []struct {
		name      string
		req       topology.Request
		wantFits  bool
		wantTotal int
	}{
		{"any product", topology.Request{Pods: 2, GPUsPerPod: 4, RequiredLevel: "node"}, true, 16},
		{"the slice's product", topology.Request{Pods: 1, GPUsPerPod: 8, Product: "GB200", RequiredLevel: "node"}, true, 8},
	} {
		got, err := m.Snapshot().Place(tc.req)
		require.NoError(t, err)
		require.Equal(t, tc.wantFits, got.FitsNow, tc.name)
		require.Equal(t, tc.wantTotal, got.ClusterTotal, tc.name)
		require.Equal(t, "z1/b1/n1", got.Domain, tc.name)
	}
	m.SetNodeDevices("n1", topology.NodeDevices{})
	got, err := m.Snapshot().Place(topology.Request{Pods: 1, GPUsPerPod: 8, RequiredLevel: "node"})
	require.NoError(t, err)
	require.False(t, got.FitsNow, "slices gone")
	require.Equal(t, 8, got.ClusterTotal)
}
