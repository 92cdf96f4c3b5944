package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/simulate/replay"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestEvictionGuardKeepsGuaranteedWork, on the real kube-scheduler: alpha
// and gamma fill the 8 nodes with guaranteed build pods (8 × 4 GPUs each,
// their whole guarantee). Gamma's inference pod, borrowed (over gamma's
// guarantee) and then guaranteed (within it, once two of gamma's pods are
// gone), has nowhere to go but by evicting build pods, whose priority is
// lower; kube-scheduler tries (the guard's refusals say so) and Mandate's
// eviction guard refuses: for a watched window no build pod is deleted or
// marked DisruptionTarget, and the inference pod stays pending. The
// scheduler's preemption attempts are counted per minute (the guard's
// refusals), reported, and bounded: its back-off holds, no hot loop.
// mandate simulate agrees on both cases (simulationAgrees): on the same
// arrivals, and from the pods the cluster runs where they run.
func TestEvictionGuardKeepsGuaranteedWork(t *testing.T) {
	s, sched, dir := startPreemption(t)
	ctx := context.Background()

	var builds []*corev1.Pod
	var scenario []replay.Job
	for _, tenant := range []string{tenantAlpha, tenantGamma} {
		for i := range 8 {
			builds = append(builds, gpuPod(tenant, fmt.Sprintf("%s-build-%d", tenant, i), "build", 4, nil))
			scenario = append(scenario, podJob(builds[len(builds)-1]))
		}
	}
	builds = s.waitBound(t, s.createPods(t, builds...))
	for _, p := range builds {
		if preemptible, _ := recorded(t, p); preemptible {
			t.Fatalf("%s/%s admitted preemptible: within %s's guarantee, it must not be", p.Namespace, p.Name, p.Namespace)
		}
	}

	// Borrowed: gamma is at its guarantee.
	borrowed := gpuPod(tenantGamma, "gamma-inference-borrowed", "inference", 8, nil)
	scenario = append(scenario, podJob(borrowed))
	s.createPods(t, borrowed)
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(borrowed), borrowed); err != nil {
		t.Fatal(err)
	}
	if preemptible, _ := recorded(t, borrowed); !preemptible {
		t.Fatalf("%s admitted non-preemptible: over gamma's guarantee, it is borrowed", borrowed.Name)
	}
	rate := s.watchProtected(t, builds, borrowed, tenantAlpha, tenantGamma)
	t.Logf("borrowed inference pod: %.1f preemption attempts refused per minute", rate)
	if rate > maxPreemptionAttemptsPerMinute {
		t.Errorf("%.1f preemption attempts a minute for one pending pod (bound %d): the scheduler retries in a loop", rate, maxPreemptionAttemptsPerMinute)
	}
	// mandate simulate, on the same arrivals, evicts nothing either and
	// keeps the borrowed pod waiting.
	var names []string
	for _, p := range builds {
		names = append(names, p.Name)
	}
	simulationAgrees(t, dir, replay.Scenario{Jobs: scenario}, names, nil)
	if err := s.env.Client.Delete(ctx, borrowed, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}

	// Guaranteed: two of gamma's pods on different nodes go, so gamma
	// holds 24 GPUs and the inference pod of 8 is within its guarantee,
	// while no node has 8 free GPUs.
	var gone []*corev1.Pod
	nodes := map[string]bool{}
	for _, p := range builds {
		if p.Namespace == tenantGamma && !nodes[p.Spec.NodeName] && len(gone) < 2 {
			nodes[p.Spec.NodeName] = true
			gone = append(gone, p)
		}
	}
	if len(gone) < 2 {
		t.Fatalf("gamma's build pods are on %d node(s): want two on different nodes", len(nodes))
	}
	var protected []*corev1.Pod
	for _, p := range builds {
		if p != gone[0] && p != gone[1] {
			protected = append(protected, p)
		}
	}
	for _, p := range gone {
		if err := s.env.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	before := guardRefusals()
	guaranteed := gpuPod(tenantGamma, "gamma-inference", "inference", 8, nil)
	arrival := podJob(guaranteed)
	s.createPods(t, guaranteed)
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(guaranteed), guaranteed); err != nil {
		t.Fatal(err)
	}
	if preemptible, _ := recorded(t, guaranteed); preemptible {
		t.Fatalf("%s admitted preemptible: within gamma's guarantee, it must not be", guaranteed.Name)
	}
	rate = s.watchProtected(t, protected, guaranteed, tenantAlpha, tenantGamma)
	t.Logf("guaranteed inference pod: %.0f preemption attempts refused since it was created, %.1f per minute over the %s after",
		guardRefusals()-before, rate, envtest.Timeout(preemptionWindow))
	// kube-scheduler did try (inference, 125, preempts lower priorities),
	// and the guard refused: else nothing above was tested.
	if guardRefusals() == before {
		t.Fatalf("kube-scheduler never tried to evict a build pod for %s", guaranteed.Name)
	}
	if rate > maxPreemptionAttemptsPerMinute {
		t.Errorf("%.1f preemption attempts a minute for one pending pod (bound %d): the scheduler retries in a loop", rate, maxPreemptionAttemptsPerMinute)
	}
	// mandate simulate, from the pods the cluster runs where they run,
	// evicts none of them either and does not start the inference pod.
	simulationAgrees(t, dir, replay.Scenario{Jobs: []replay.Job{arrival}, Supply: replay.Supply{Pods: protected}}, nil, nil)
	// kube-scheduler's side of the same attempts: the guard answers a
	// refused mark NotFound, which it logs as a victim already gone.
	t.Logf("kube-scheduler logged %d refused preemptions over the test", strings.Count(sched.Log(), refusedMarkLog))
}

// refusedMarkLog is what kube-scheduler logs (at -v=2) when marking a
// victim DisruptionTarget answers NotFound, as the guard's refusal does.
const refusedMarkLog = "Victim Pod is already deleted"
