package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

// gpuClaim is an 8-GPU claim of the NVIDIA driver's class, allocated when
// allocated.
func gpuClaim(namespace, name string, allocated bool) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 8}}}}}}
	if allocated {
		c.Status.Allocation = &resourcev1.AllocationResult{}
		for i := range 8 {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourcev1.DeviceRequestAllocationResult{
				Request: "gpus", Driver: "gpu.nvidia.com", Pool: "n0", Device: "gpu-" + string(rune('0'+i))})
		}
	}
	return c
}

// TestWatchCountsDRAClaims: through the informers as serve runs them (pods
// stored as PodFacts), running pods count the devices of the claims they
// hold, named directly or generated from a template, and are recounted as
// the claims' allocations change.
func TestWatchCountsDRAClaims(t *testing.T) {
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
	nsInf, _ := informers.FakeInformerFor(ctx, &corev1.Namespace{})
	podInf, _ := informers.FakeInformerFor(ctx, &corev1.Pod{})
	claimInf, _ := informers.FakeInformerFor(ctx, &resourcev1.ResourceClaim{})
	nsInf.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{workload.LabelTenant: "product"}}})

	named := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "a"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptrTo("claim-a")}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	templated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "b"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptrTo("eight")}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpus", ResourceClaimName: ptrTo("b-gpus-x1")}}}}
	podInf.Add(CompactPod(named))
	podInf.Add(CompactPod(templated))
	claimInf.Add(gpuClaim("p", "claim-a", true))
	claimInf.Add(gpuClaim("p", "b-gpus-x1", true))
	gpus := func() ledger.Usage { return s.Usage("product")["product"]["nvidia.com/gpu"] }
	if got, want := gpus(), (ledger.Usage{Total: 16, NonPreemptible: 16}); got != want {
		t.Fatalf("two running 8-GPU DRA pods: usage = %+v, want %+v", got, want)
	}
	claimInf.Update(gpuClaim("p", "claim-a", true), gpuClaim("p", "claim-a", false))
	if got, want := gpus(), (ledger.Usage{Total: 16, NonPreemptible: 16}); got != want {
		t.Errorf("a held claim deallocated counts what it requests: usage = %+v, want %+v", got, want)
	}
	claimInf.Delete(gpuClaim("p", "claim-a", false))
	if got, want := gpus(), (ledger.Usage{Total: 8, NonPreemptible: 8}); got != want {
		t.Errorf("after a claim's deletion: usage = %+v, want %+v", got, want)
	}
	podInf.Delete(CompactPod(templated))
	if got := gpus(); got != (ledger.Usage{}) {
		t.Errorf("after the pods' deletion: usage = %+v, want none", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestPendingClaimsCountTheirTemplate: a pod whose claim from a
// ResourceClaimTemplate is not made yet counts the template's requests,
// with no reservation to cover it; once its status names the claim, the
// claim's devices, never both.
func TestPendingClaimsCountTheirTemplate(t *testing.T) {
	ctx := context.Background()
	s, err := New(fixtures.Evaluator(t, "embedded", nil).Model())
	if err != nil {
		t.Fatal(err)
	}
	informers := &informertest.FakeInformers{}
	if err := s.Watch(ctx, informers); err != nil {
		t.Fatalf("Watch() error = %v", err)
	}
	nsInf, _ := informers.FakeInformerFor(ctx, &corev1.Namespace{})
	podInf, _ := informers.FakeInformerFor(ctx, &corev1.Pod{})
	tplInf, _ := informers.FakeInformerFor(ctx, &resourcev1.ResourceClaimTemplate{})
	claimInf, _ := informers.FakeInformerFor(ctx, &resourcev1.ResourceClaim{})
	nsInf.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{workload.LabelTenant: "product"}}})
	tpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "eight"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: gpuClaim("p", "", false).Spec}}
	tplInf.Add(tpl)
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "b"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptrTo("eight")}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	podInf.Add(CompactPod(pending))
	gpus := func() ledger.Usage { return s.Usage("product")["product"]["nvidia.com/gpu"] }
	if got, want := gpus(), (ledger.Usage{Total: 8, NonPreemptible: 8}); got != want {
		t.Fatalf("claim not made: usage = %+v, want the template's %+v", got, want)
	}
	made := pending.DeepCopy()
	made.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpus", ResourceClaimName: ptrTo("b-gpus-x1")}}
	claimInf.Add(gpuClaim("p", "b-gpus-x1", true))
	podInf.Update(CompactPod(pending), CompactPod(made))
	if got, want := gpus(), (ledger.Usage{Total: 8, NonPreemptible: 8}); got != want {
		t.Errorf("claim made and allocated: usage = %+v, want the claim's %+v", got, want)
	}
	tplInf.Delete(tpl)
	if got, want := gpus(), (ledger.Usage{Total: 8, NonPreemptible: 8}); got != want {
		t.Errorf("template gone, claim stays: usage = %+v, want %+v", got, want)
	}
	podInf.Update(CompactPod(made), CompactPod(pending))
	if got := gpus(); got != (ledger.Usage{}) {
		t.Errorf("pending again without its template: usage = %+v, want none", got)
	}
}
