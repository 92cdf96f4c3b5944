package cluster

import (
	"bytes"
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// place8 is where one pod of 8 GPUs of product goes in s now.
func place8(t *testing.T, s *State, product string) topology.Result {
	t.Helper()
	r, err := s.Snapshot().Place(topology.Request{Pods: 1, GPUsPerPod: 8, Product: product, RequiredLevel: "node"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bareNode is a node with no GPU allocatable: its GPUs come from DRA.
func bareNode(name string) *corev1.Node {
	return &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// TestSnapshotCountsSlices: a snapshot file's ResourceSlices and
// DeviceClasses are its nodes' capacity, with the product their devices
// name, in whatever order they come.
func TestSnapshotCountsSlices(t *testing.T) {
	var file bytes.Buffer
	for _, o := range []any{topologytest.GPUSlice("n0", 8, "NVIDIA H100 80GB HBM3"), bareNode("n0"), topologytest.GPUDeviceClass()} {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		file.WriteString("---\n")
		file.Write(b)
	}
	s, err := New(fixtures.Evaluator(t, "embedded", nil).Model())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(&file); err != nil {
		t.Fatal(err)
	}
	if r := place8(t, s, "NVIDIA-H100-80GB-HBM3"); !r.FitsNow || r.ClusterTotal != 8 {
		t.Errorf("8 GPUs of the slice: %+v, want fits with 8 in all", r)
	}
}

// TestWatchCountsSlices: through the informers, a slice's devices count
// once their DeviceClass is known, leave when a taint keeps them from new
// claims, and go with the slice.
func TestWatchCountsSlices(t *testing.T) {
	ctx := context.Background()
	s, err := New(fixtures.Evaluator(t, "embedded", nil).Model())
	if err != nil {
		t.Fatal(err)
	}
	informers := &informertest.FakeInformers{}
	if err := s.Watch(ctx, informers); err != nil {
		t.Fatal(err)
	}
	nodeInf, _ := informers.FakeInformerFor(ctx, &corev1.Node{})
	sliceInf, _ := informers.FakeInformerFor(ctx, &resourcev1.ResourceSlice{})
	classInf, _ := informers.FakeInformerFor(ctx, &resourcev1.DeviceClass{})
	nodeInf.Add(bareNode("n0"))
	slice := topologytest.GPUSlice("n0", 8, "")
	sliceInf.Add(slice)
	if r := place8(t, s, ""); r.ClusterTotal != 0 {
		t.Errorf("before its DeviceClass: %d GPUs, want 0", r.ClusterTotal)
	}
	classInf.Add(topologytest.GPUDeviceClass())
	if r := place8(t, s, ""); !r.FitsNow || r.ClusterTotal != 8 {
		t.Errorf("with its DeviceClass: %+v, want 8 that fit", r)
	}
	tainted := slice.DeepCopy()
	tainted.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
	sliceInf.Update(slice, tainted)
	if r := place8(t, s, ""); r.FitsNow || r.ClusterTotal != 7 {
		t.Errorf("one device tainted: %+v, want 7 that do not fit 8", r)
	}
	if got := s.NodeDevices()["n0"].Tainted["nvidia.com/gpu"]; got != 1 {
		t.Errorf("tainted devices of n0 = %d, want 1", got)
	}
	sliceInf.Delete(tainted)
	if r := place8(t, s, ""); r.ClusterTotal != 0 {
		t.Errorf("slice gone: %d GPUs, want 0", r.ClusterTotal)
	}
}
