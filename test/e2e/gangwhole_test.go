package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/simulate/replay"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// TestGangEvictedWhole, on the real kube-scheduler and
// kube-controller-manager's Job controller: gamma holds its guarantee with
// four guaranteed inference pods on one NVLink clique, and runs a 4-pod
// build gang (a Job of 4 × 8 GPUs, borrowed: over its guarantee) on the
// other. Alpha's guaranteed build pod, of the gang's own tier, has room
// only where the gang runs; kube-scheduler preempts one gang pod (its
// borrowed class is below every guaranteed tier), and Mandate's gang-whole
// controller deletes the other three at once: the gang is evicted whole,
// not pod by pod, alpha's pod is bound, gamma's guaranteed pods are
// untouched. mandate simulate, on the same arrivals, evicts the same gang
// and keeps the same pods (simulationAgrees).
func TestGangEvictedWhole(t *testing.T) {
	s, _, dir := startPreemption(t)
	envtest.StartControllers(t, s.env, "", "job-controller")
	ctx := context.Background()

	clique := map[string]string{topologytest.LabelClique: "b1-c0"}
	var guaranteed []*corev1.Pod
	var scenario []replay.Job
	for i := range 4 {
		guaranteed = append(guaranteed, gpuPod(tenantGamma, fmt.Sprintf("gamma-serve-%d", i), "inference", 8, clique))
		scenario = append(scenario, podJob(guaranteed[i]))
	}
	guaranteed = s.waitBound(t, s.createPods(t, guaranteed...))

	// The gang as mandate simulate sees it: the Job's template, 4 pods.
	gangJob := podJob(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tenantGamma, Name: "gamma-gang"},
		Spec: gpuPod(tenantGamma, "", "build", 8, nil).Spec})
	gangJob.Pods = 4
	scenario = append(scenario, gangJob)
	gang := s.runGang(t, true)

	// Of the same tier as the gang: the gang is borrowed, so its class is
	// build-borrowed, below every guaranteed tier.
	preemptor := gpuPod(tenantAlpha, "alpha-build", "build", 8, nil)
	scenario = append(scenario, podJob(preemptor))
	s.createPods(t, preemptor)
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(preemptor), preemptor); err != nil {
		t.Fatal(err)
	}
	if preemptible, _ := recorded(t, preemptor); preemptible {
		t.Fatalf("%s admitted preemptible: within alpha's guarantee, it must not be", preemptor.Name)
	}
	envtest.WaitFor(t, 2*time.Minute, "alpha's build pod to be bound in the gang's place", func() bool {
		if _, err := envtest.RemoveTerminatingPods(ctx, s.env.Client, tenantGamma); err != nil {
			t.Fatal(err)
		}
		got := &corev1.Pod{}
		return s.env.Client.Get(ctx, client.ObjectKeyFromObject(preemptor), got) == nil && got.Spec.NodeName != ""
	})
	// Whole: every pod of the gang went, not only the victim.
	envtest.WaitFor(t, time.Minute, "every pod of the preempted gang to be deleted", func() bool {
		if _, err := envtest.RemoveTerminatingPods(ctx, s.env.Client, tenantGamma); err != nil {
			t.Fatal(err)
		}
		for _, p := range gang {
			if what, _ := s.disruption(ctx, p); what == "" {
				return false
			}
		}
		return true
	})
	running := []string{preemptor.Name}
	for _, p := range guaranteed {
		if what, err := s.disruption(ctx, p); err != nil || what != "" {
			t.Errorf("gamma's guaranteed pod was disrupted: %s %v", what, err)
		} else {
			running = append(running, p.Name)
		}
	}
	// mandate simulate evicts the same gang, whole, and keeps the rest.
	simulationAgrees(t, dir, replay.Scenario{Jobs: scenario}, running, []string{gangJob.Name})
}

// runGang runs gamma's Job gamma-gang of 4 build pods of 8 GPUs, one gang,
// and returns its pods once kube-scheduler has bound them all, after
// checking that Mandate admitted them as a gang of 4, borrowed
// (preemptible) or within gamma's guarantee.
func (s *suite) runGang(t *testing.T, borrowed bool) []*corev1.Pod {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantGamma, Name: "gamma-gang"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(int32(4)), Completions: ptr.To(int32(4)),
			Template: corev1.PodTemplateSpec{Spec: gpuPod(tenantGamma, "", "build", 8, nil).Spec}},
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if err := s.env.Client.Create(context.Background(), job); err != nil {
		t.Fatalf("create Job %s: %v", job.Name, err)
	}
	var gang []*corev1.Pod
	envtest.WaitFor(t, 2*time.Minute, "the Job controller to create the gang's 4 pods and kube-scheduler to bind them", func() bool {
		gang = s.jobPods(t, job)
		return len(gang) == 4 && !slices.ContainsFunc(gang, func(p *corev1.Pod) bool { return p.Spec.NodeName == "" })
	})
	want := "within gamma's guarantee"
	if borrowed {
		want = "borrowed"
	}
	for _, p := range gang {
		if preemptible, gangMin := recorded(t, p); preemptible != borrowed || gangMin != 4 {
			t.Fatalf("gang pod %s admitted preemptible=%v gangMin=%d: want a gang of 4, %s", p.Name, preemptible, gangMin, want)
		}
	}
	return gang
}

// jobPods are the pods of job that are not being deleted.
func (s *suite) jobPods(t *testing.T, job *batchv1.Job) []*corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	if err := s.env.Client.List(context.Background(), list, client.InNamespace(job.Namespace)); err != nil {
		t.Fatalf("list pods of %s: %v", job.Namespace, err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// TestGuaranteedGangNotEvicted is the other half of whole or not at all:
// gamma's 4-pod build gang within its guarantee runs, and alpha's
// guaranteed inference pod, pinned to a gang pod's node, has room only by
// evicting that pod, of a lower priority. kube-scheduler tries,
// the eviction guard refuses, and over the watched window no pod of the
// gang is deleted or marked: the gang is not broken at all.
func TestGuaranteedGangNotEvicted(t *testing.T) {
	s, _, _ := startPreemption(t)
	envtest.StartControllers(t, s.env, "", "job-controller")

	gang := s.runGang(t, false)
	// The default scheduler is told no topology: the gang's pods are on
	// some four nodes; alpha's pod asks for the first one's.
	onGangNode := map[string]string{topologytest.LabelHostname: gang[0].Spec.NodeName}

	before := guardRefusals()
	preemptor := s.createPods(t, gpuPod(tenantAlpha, "alpha-inference", "inference", 8, onGangNode))[0]
	rate := s.watchProtected(t, gang, preemptor, tenantGamma)
	t.Logf("guaranteed gang: %.0f preemption attempts refused, %.1f per minute over the window", guardRefusals()-before, rate)
	if guardRefusals() == before {
		t.Fatalf("kube-scheduler never tried to evict a gang pod for %s", preemptor.Name)
	}
	if rate > maxPreemptionAttemptsPerMinute {
		t.Errorf("%.1f preemption attempts a minute for one pending pod (bound %d): the scheduler retries in a loop", rate, maxPreemptionAttemptsPerMinute)
	}
}
