package inventory

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

func unstructuredOf(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetGroupVersionKind(gvk)
	return out
}

// TestCountWholeAndCounted: an inventory of whole pods and one of the
// same pods as facts (ListCounted's) feed a state the same usage and
// placement; the nodes are typed in their order.
func TestCountWholeAndCounted(t *testing.T) {
	m := fixtures.Evaluator(t, "embedded", nil).Model()
	whole, counted := &Inventory{}, &Inventory{countedOnly: true}
	for i := range 4 {
		n := fixtures.GPUNode(i)
		whole.Nodes = append(whole.Nodes, unstructuredOf(t, n, nodeGVK))
		counted.Nodes = append(counted.Nodes, unstructuredOf(t, cluster.StripNode(n), nodeGVK))
	}
	for ns, tenant := range fixtures.Tenants() {
		obj := unstructuredOf(t, fixtures.TenantNamespace(ns, tenant), namespaceGVK)
		whole.Namespaces = append(whole.Namespaces, obj)
		counted.Namespaces = append(counted.Namespaces, obj)
	}
	for i := range 12 {
		p := topologytest.GPUPod("vision", fmt.Sprintf("p-%d", i), int64(i%4+1), topologytest.OnNode(fixtures.GPUNode(i%4).Name),
			topologytest.InPhase(corev1.PodRunning), topologytest.WithPriorityClass("train"))
		whole.Pods = append(whole.Pods, unstructuredOf(t, p, podGVK))
		counted.Facts = append(counted.Facts, cluster.CompactPod(p))
	}
	states := make([]*cluster.State, 2)
	for i, inv := range []*Inventory{whole, counted} {
		s, err := cluster.New(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := inv.Count(s); err != nil {
			t.Fatal(err)
		}
		nodes, err := inv.TypedNodes()
		if err != nil {
			t.Fatal(err)
		}
		for j, n := range nodes {
			if n.Name != fixtures.GPUNode(j).Name {
				t.Fatalf("TypedNodes()[%d] = %s, want %s", j, n.Name, fixtures.GPUNode(j).Name)
			}
		}
		states[i] = s
	}
	got, want := states[1].Usage("research-vision"), states[0].Usage("research-vision")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("usage counted from facts %+v, from whole pods %+v", got, want)
	}
	if n := want["research-vision"]["nvidia.com/gpu"].Total; n != 30 {
		t.Errorf("research-vision uses %d GPUs, want the pods' 30", n)
	}
	if a, b := states[0].Snapshot(), states[1].Snapshot(); a.NodeCount() != 4 || b.NodeCount() != 4 {
		t.Errorf("the states know %d and %d nodes, want 4", a.NodeCount(), b.NodeCount())
	}
}
