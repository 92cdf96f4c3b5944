package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/simulate/replay"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestGuaranteedReclaimsBorrowed, on the real kube-scheduler: gamma runs
// its guarantee (4 × 8 GPUs of build) and borrows the rest of the cluster
// with build pods of its own tier (4 × 8 GPUs, admitted preemptible at
// build-borrowed). Alpha's guaranteed build pod, of the same tier, takes
// its GPUs back: kube-scheduler evicts one borrowed pod, never a
// guaranteed one, and binds alpha's pod. mandate simulate, on the same
// arrivals, evicts the same pod (simulationAgrees).
func TestGuaranteedReclaimsBorrowed(t *testing.T) {
	s, _, dir := startPreemption(t)
	ctx := context.Background()

	var guaranteed, borrowed []*corev1.Pod
	var scenario []replay.Job
	for i := range 4 {
		guaranteed = append(guaranteed, gpuPod(tenantGamma, fmt.Sprintf("gamma-build-%d", i), "build", 8, nil))
		scenario = append(scenario, podJob(guaranteed[i]))
	}
	guaranteed = s.waitBound(t, s.createPods(t, guaranteed...))
	for i := range 4 {
		borrowed = append(borrowed, gpuPod(tenantGamma, fmt.Sprintf("gamma-borrowed-%d", i), "build", 8, nil))
		scenario = append(scenario, podJob(borrowed[i]))
	}
	borrowed = s.waitBound(t, s.createPods(t, borrowed...))
	// As a kubelet would, one second apart in the order they were bound:
	// among victims otherwise equal, kube-scheduler evicts on the node
	// whose victim started the latest, as the simulation does.
	s.markStarted(t, append(slices.Clone(guaranteed), borrowed...))
	for _, p := range borrowed {
		if preemptible, _ := recorded(t, p); !preemptible || p.Spec.PriorityClassName != model.BorrowedClass("build") {
			t.Fatalf("%s admitted preemptible=%v at %s: over gamma's guarantee, it is borrowed, at %s", p.Name, preemptible,
				p.Spec.PriorityClassName, model.BorrowedClass("build"))
		}
	}

	preemptor := gpuPod(tenantAlpha, "alpha-build", "build", 8, nil)
	scenario = append(scenario, podJob(preemptor))
	s.createPods(t, preemptor)
	envtest.WaitFor(t, 2*time.Minute, "alpha's guaranteed build pod to be bound in a borrowed pod's place", func() bool {
		if _, err := envtest.RemoveTerminatingPods(ctx, s.env.Client, tenantGamma); err != nil {
			t.Fatal(err)
		}
		got := &corev1.Pod{}
		return s.env.Client.Get(ctx, client.ObjectKeyFromObject(preemptor), got) == nil && got.Spec.NodeName != ""
	})
	var evicted, running []string
	for _, p := range borrowed {
		if what, err := s.disruption(ctx, p); err != nil {
			t.Fatal(err)
		} else if what != "" {
			evicted = append(evicted, p.Name)
		} else {
			running = append(running, p.Name)
		}
	}
	if len(evicted) != 1 {
		t.Errorf("%d of gamma's borrowed pods evicted (%v), want the one alpha's pod needs", len(evicted), evicted)
	}
	for _, p := range guaranteed {
		if what, err := s.disruption(ctx, p); err != nil || what != "" {
			t.Errorf("gamma's guaranteed pod was disrupted: %s %v", what, err)
		} else {
			running = append(running, p.Name)
		}
	}
	// mandate simulate evicts the same borrowed pod and keeps the rest.
	simulationAgrees(t, dir, replay.Scenario{Jobs: scenario}, append(running, preemptor.Name), evicted)
}
