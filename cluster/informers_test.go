package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

func TestWatch(t *testing.T) {
	ctx := context.Background()
	ev := fixtures.Evaluator(t, "embedded", nil)
	s, err := New(ev.Model())
	if err != nil {
		t.Fatal(err)
	}
	informers := &informertest.FakeInformers{}
	if err := s.Watch(ctx, informers); err != nil {
		t.Fatalf("Watch() error = %v", err)
	}
	fake := func(obj client.Object) interface {
		Add(metav1.Object)
		Update(metav1.Object, metav1.Object)
		Delete(metav1.Object)
	} {
		f, err := informers.FakeInformerFor(ctx, obj)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vision", Labels: map[string]string{workload.LabelTenant: "research-vision"}}}
	fake(&corev1.Namespace{}).Add(ns)
	if got := s.Namespace("vision").Labels[workload.LabelTenant]; got != "research-vision" {
		t.Errorf("after add: tenant = %q, want research-vision", got)
	}
	relabelled := ns.DeepCopy()
	relabelled.Labels[workload.LabelTenant] = "product"
	fake(&corev1.Namespace{}).Update(ns, relabelled)
	if got := s.Namespace("vision").Labels[workload.LabelTenant]; got != "product" {
		t.Errorf("after update: tenant = %q, want product", got)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{"kubernetes.io/hostname": "n0"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	fake(&corev1.Node{}).Add(node)
	if got := s.Snapshot().NodeCount(); got != 1 {
		t.Errorf("after node add: NodeCount() = %d, want 1", got)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "vision"},
		Spec: corev1.PodSpec{NodeName: "n0", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	fake(&corev1.Pod{}).Add(pod)
	if got := s.Usage("product"); len(got) == 0 {
		t.Errorf("after pod add: Usage(product) is empty")
	}
	fake(&corev1.Pod{}).Delete(pod)
	fake(&corev1.Node{}).Delete(node)
	if got := s.Snapshot().NodeCount(); got != 0 {
		t.Errorf("after node delete: NodeCount() = %d, want 0", got)
	}
	fake(&corev1.Namespace{}).Delete(relabelled)
	if got := s.Namespace("vision").Labels; len(got) != 0 {
		t.Errorf("after namespace delete: labels = %v, want none", got)
	}
}

func TestEventHandlerUnwrapsTombstones(t *testing.T) {
	var removed any
	h := eventHandler(func(any) {}, func(o any) { removed = o })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}}
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "n0", Obj: node})
	if removed != node {
		t.Errorf("removed %v, want the tombstone's last state", removed)
	}
}
