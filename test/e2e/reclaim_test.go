package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestGuaranteedReclaimsBorrowed, on the real kube-scheduler: gamma runs
// its guarantee (4 × 8 GPUs of build) and borrows the rest of the cluster
// with build pods of its own tier (4 × 8 GPUs, admitted preemptible at
// build-borrowed). Alpha's guaranteed build pod, of the same tier, takes
// its GPUs back: kube-scheduler evicts one borrowed pod, never a
// guaranteed one, and binds alpha's pod.
func TestGuaranteedReclaimsBorrowed(t *testing.T) {
	s, _ := startPreemption(t)
	ctx := context.Background()

	var guaranteed, borrowed []*corev1.Pod
	for i := range 4 {
		guaranteed = append(guaranteed, gpuPod(tenantGamma, fmt.Sprintf("gamma-build-%d", i), "build", 8, nil))
	}
	guaranteed = s.waitBound(t, s.createPods(t, guaranteed...))
	for i := range 4 {
		borrowed = append(borrowed, gpuPod(tenantGamma, fmt.Sprintf("gamma-borrowed-%d", i), "build", 8, nil))
	}
	borrowed = s.waitBound(t, s.createPods(t, borrowed...))
	for _, p := range borrowed {
		if preemptible, _ := recorded(t, p); !preemptible || p.Spec.PriorityClassName != model.BorrowedClass("build") {
			t.Fatalf("%s admitted preemptible=%v at %s: over gamma's guarantee, it is borrowed, at %s", p.Name, preemptible,
				p.Spec.PriorityClassName, model.BorrowedClass("build"))
		}
	}

	preemptor := s.createPods(t, gpuPod(tenantAlpha, "alpha-build", "build", 8, nil))[0]
	envtest.WaitFor(t, 2*time.Minute, "alpha's guaranteed build pod to be bound in a borrowed pod's place", func() bool {
		if _, err := envtest.RemoveTerminatingPods(ctx, s.env.Client, tenantGamma); err != nil {
			t.Fatal(err)
		}
		got := &corev1.Pod{}
		return s.env.Client.Get(ctx, client.ObjectKeyFromObject(preemptor), got) == nil && got.Spec.NodeName != ""
	})
	evicted := 0
	for _, p := range borrowed {
		if what, err := s.disruption(ctx, p); err != nil {
			t.Fatal(err)
		} else if what != "" {
			evicted++
		}
	}
	if evicted != 1 {
		t.Errorf("%d of gamma's borrowed pods evicted, want the one alpha's pod needs", evicted)
	}
	for _, p := range guaranteed {
		if what, err := s.disruption(ctx, p); err != nil || what != "" {
			t.Errorf("gamma's guaranteed pod was disrupted: %s %v", what, err)
		}
	}
}
