package replay

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/simulate/openb"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// Supply is the simulated cluster's nodes and, from a snapshot, its
// namespaces (a trace job naming a namespace finds its tenant there).
type Supply struct {
	Nodes      []*corev1.Node
	Namespaces []*corev1.Namespace
	// Pods, when set, are the starting state: the pods bound to a node and
	// not finished run from time 0 (see Options.StartingRemaining), and
	// Owners' holds (the governed workloads Mandate admitted) count in the
	// decisions' state.
	Pods   []*corev1.Pod
	Owners []*unstructured.Unstructured
}

// WithStartingState adds a snapshot's or a live cluster's pods and
// governed owners as the starting state.
func (s Supply) WithStartingState(pods, owners []*unstructured.Unstructured) (Supply, error) {
	for _, u := range pods {
		p := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return Supply{}, fmt.Errorf("malformed Pod %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		s.Pods = append(s.Pods, p)
	}
	s.Owners = owners
	return s, nil
}

// FromSnapshot takes the nodes and namespaces of a cluster snapshot (the
// objects inventory.ReadSnapshot reads); its pods are not the starting
// state: the simulated cluster starts empty.
func FromSnapshot(nodes, namespaces []*unstructured.Unstructured) (Supply, error) {
	var s Supply
	for _, u := range nodes {
		n := &corev1.Node{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, n); err != nil {
			return Supply{}, fmt.Errorf("malformed Node %s: %w", u.GetName(), err)
		}
		s.Nodes = append(s.Nodes, n)
	}
	for _, u := range namespaces {
		ns := &corev1.Namespace{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns); err != nil {
			return Supply{}, fmt.Errorf("malformed Namespace %s: %w", u.GetName(), err)
		}
		s.Namespaces = append(s.Namespaces, ns)
	}
	return s, nil
}

// FromOpenbNodes makes a node of each openb node list row: its sn as the
// name and kubernetes.io/hostname, its model as nvidia.com/gpu.product,
// its CPU, memory and GPUs allocatable.
func FromOpenbNodes(rows []openb.Node) Supply {
	var s Supply
	for _, r := range rows {
		alloc := corev1.ResourceList{
			corev1.ResourceCPU:          *resource.NewMilliQuantity(r.CPUMilli, resource.DecimalSI),
			corev1.ResourceMemory:       *resource.NewQuantity(r.MemoryMiB<<20, resource.BinarySI),
			topology.DefaultGPUResource: *resource.NewQuantity(int64(r.GPUs), resource.DecimalSI),
		}
		s.Nodes = append(s.Nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{
				"kubernetes.io/hostname": r.Name, topology.DefaultProductLabel: r.Model, "nvidia.com/gpu.count": strconv.Itoa(r.GPUs)}},
			Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		})
	}
	return s
}

// spec is a node as the simulated cluster allocates it: its allocatable
// CPU, memory and whole nvidia.com/gpu devices, its product as the GPU type.
func spec(n *corev1.Node) alloc.NodeSpec {
	a := n.Status.Allocatable
	if len(a) == 0 {
		a = n.Status.Capacity
	}
	cpu, mem, gpu := a[corev1.ResourceCPU], a[corev1.ResourceMemory], a[topology.DefaultGPUResource]
	return alloc.NodeSpec{Name: n.Name, Model: n.Labels[topology.DefaultProductLabel], CPUMilli: cpu.MilliValue(),
		MemoryMiB: mem.Value() >> 20, GPUs: int(gpu.Value())}
}

// Reference is the synthetic reference topology (topologytest.Reference)
// of n empty 8-GPU nodes, with its tenants' namespaces (tenant-NNNN,
// labelled with their own name as tenant; the reference organisation's,
// topologytest.ReferenceTenants).
func Reference(n int) Supply {
	nodes, _, namespaces := topologytest.Reference(topologytest.RefOptions{NodeCount: n, BusyFraction: -1})
	var s Supply
	for i := range nodes {
		s.Nodes = append(s.Nodes, &nodes[i])
	}
	for i := range namespaces {
		s.Namespaces = append(s.Namespaces, &namespaces[i])
	}
	return s
}
