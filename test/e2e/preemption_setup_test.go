package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evictguard"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// The preemption tests' model: two tenants on the default kube-scheduler,
// alpha and gamma, 32 GPUs guaranteed each and a ceiling of the whole
// test cluster (8 nodes × 8 GPUs), under one root; work beyond a tenant's
// guarantee is borrowed (quotaPolicy.overGuarantee: preemptible, as the
// default model has it).
const (
	tenantAlpha = "alpha"
	tenantGamma = "gamma"
	// preemptionGuarantee is each tenant's guarantee.
	preemptionGuarantee = 32
)

// preemptionWindow is how long a test watches for an eviction that must
// not happen: kube-scheduler retries an unschedulable pod within seconds
// (its back-off is 1-10 s), so a window of a minute sees several attempts.
const preemptionWindow = time.Minute

// maxPreemptionAttemptsPerMinute bounds the rate of the scheduler's
// preemption attempts the guard refuses: its back-off keeps it to a few a
// minute for each pending pod; a retry loop without back-off would make
// hundreds.
const maxPreemptionAttemptsPerMinute = 120

// preemptionModel edits the default model into the preemption tests' one.
func preemptionModel(m map[string]any) {
	tiers := []any{"train", "build-preemptible", "build", "inference"}
	quota := func(guaranteed, ceiling int) map[string]any {
		return map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": guaranteed, "ceiling": ceiling}}
	}
	tenant := func(parent string, guaranteed, ceiling int) map[string]any {
		return map[string]any{"parent": parent, "description": "preemption test tenant", "quota": quota(guaranteed, ceiling),
			"priorityClasses": tiers, "scheduler": "default"}
	}
	// The root's ceiling is above the cluster's 64 GPUs: borrowed work
	// never keeps another tenant's guaranteed work out at admission, only
	// on the nodes, where the scheduler evicts it.
	m["tenants"] = map[string]any{
		"org":       tenant("", 2*preemptionGuarantee, 4*preemptionGuarantee),
		tenantAlpha: tenant("org", preemptionGuarantee, 2*preemptionGuarantee),
		tenantGamma: tenant("org", preemptionGuarantee, 2*preemptionGuarantee),
	}
}

// startPreemption runs Mandate (the preemption model, its webhooks
// registered over TLS, its eviction guard for system:kube-scheduler),
// the test cluster's 8 GPU nodes, the tenants' namespaces, the model's
// PriorityClasses made by mandate sync's code path, and the real
// kube-scheduler. dir is the policies Mandate serves, for the simulation
// of the same scenario (simulationAgrees).
func startPreemption(t *testing.T) (s *suite, sched *envtest.Scheduler, dir string) {
	t.Helper()
	var data map[string]any
	dir = candidateDir(t, func(m map[string]any) {
		preemptionModel(m)
		data = m
	})
	s = startWith(t, startOptions{config: func(c *config.Serve) { c.Policies = dir }})
	ctx := context.Background()
	c := s.env.Client
	const nodes = testClusterNodes
	for i := range nodes {
		if err := fixtures.CreateNode(ctx, c, fixtures.GPUNode(i)); err != nil {
			t.Fatal(err)
		}
	}
	// kube-scheduler, like Kueue's TAS, counts pods against the nodes'
	// allocatable pods, as a kubelet reports them.
	kueueNodes(t, s)
	for _, tenant := range []string{tenantAlpha, tenantGamma} {
		if err := c.Create(ctx, fixtures.TenantNamespace(tenant, tenant)); err != nil {
			t.Fatalf("create namespace %s: %v", tenant, err)
		}
	}
	spec, err := model.FromData(map[string]any{"mandate": map[string]any{"model": data}})
	if err != nil {
		t.Fatal(err)
	}
	syncer := schedsync.Syncer{Client: c}
	plan, err := syncer.PlanModel(ctx, spec, schedsync.Options{})
	if err != nil {
		t.Fatalf("mandate sync's plan: %v", err)
	}
	if err := syncer.Apply(ctx, plan, false); err != nil {
		t.Fatalf("mandate sync's apply: %v", err)
	}
	envtest.WaitFor(t, 20*time.Second, "every replica's cluster state to see the nodes and namespaces", func() bool {
		for _, r := range s.replicas {
			fit, err := r.State.Snapshot().Place(topology.Request{Pods: nodes, GPUsPerPod: 8, Resource: "nvidia.com/gpu", RequiredLevel: "block"})
			if err != nil || !fit.FitsNow {
				return false
			}
			for _, tenant := range []string{tenantAlpha, tenantGamma} {
				if r.State.Namespace(tenant).Labels[workload.LabelTenant] != tenant {
					return false
				}
			}
		}
		return true
	})
	return s, envtest.StartScheduler(t, s.env), dir
}

// gpuPod is a pod of tenant (its namespace) asking for gpus GPUs at tier
// class, with nodeSelector when set.
func gpuPod(tenant, name, class string, gpus int, nodeSelector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name},
		Spec: corev1.PodSpec{
			PriorityClassName: class,
			NodeSelector:      nodeSelector,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/" + class + ":1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}}}},
		},
	}
}

// createPods creates pods through Mandate's webhooks and returns them as
// admitted.
func (s *suite) createPods(t *testing.T, pods ...*corev1.Pod) []*corev1.Pod {
	t.Helper()
	for _, p := range pods {
		if err := s.env.Client.Create(context.Background(), p); err != nil {
			t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	return pods
}

// recorded is the directives Mandate recorded on pod.
func recorded(t *testing.T, pod *corev1.Pod) (preemptible bool, gangMin int) {
	t.Helper()
	d, ok, err := scheduler.RecordedDirectives(pod.Annotations)
	if err != nil || !ok {
		t.Fatalf("pod %s/%s carries no directives of Mandate's (%v)", pod.Namespace, pod.Name, err)
	}
	return d.Preemptible, d.GangMin
}

// waitBound waits until every pod of pods is bound to a node, and returns
// them as stored.
func (s *suite) waitBound(t *testing.T, pods []*corev1.Pod) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	out := make([]*corev1.Pod, len(pods))
	envtest.WaitFor(t, 2*time.Minute, fmt.Sprintf("kube-scheduler to bind %d pods", len(pods)), func() bool {
		for i, p := range pods {
			got := &corev1.Pod{}
			if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil || got.Spec.NodeName == "" {
				return false
			}
			out[i] = got
		}
		return true
	})
	return out
}

// markStarted sets each pod's status.startTime as a kubelet starting them
// one second apart, in order, would: kube-scheduler, choosing between
// nodes whose victims are otherwise equal, evicts where the victim started
// the latest, and a pod no kubelet started counts as starting at every
// look (the choice is then arbitrary).
func (s *suite) markStarted(t *testing.T, pods []*corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-time.Duration(len(pods)) * time.Second).Truncate(time.Second)
	for i, p := range pods {
		got := &corev1.Pod{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatalf("pod %s/%s: %v", p.Namespace, p.Name, err)
		}
		got.Status.StartTime = &metav1.Time{Time: base.Add(time.Duration(i) * time.Second)}
		if err := s.env.Client.Status().Update(ctx, got); err != nil {
			t.Fatalf("set the start time of pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
}

// disruption says what happened to pod since it was bound: "" when it is
// there unchanged, else that it is gone, being deleted or marked
// DisruptionTarget.
func (s *suite) disruption(ctx context.Context, pod *corev1.Pod) (string, error) {
	got := &corev1.Pod{}
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		return fmt.Sprintf("%s/%s is gone (%v)", pod.Namespace, pod.Name, err), nil
	}
	switch {
	case got.UID != pod.UID:
		return fmt.Sprintf("%s/%s was replaced", pod.Namespace, pod.Name), nil
	case got.DeletionTimestamp != nil:
		return fmt.Sprintf("%s/%s is being deleted", pod.Namespace, pod.Name), nil
	case slices.ContainsFunc(got.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget }):
		return fmt.Sprintf("%s/%s is marked %s", pod.Namespace, pod.Name, corev1.DisruptionTarget), nil
	}
	return "", nil
}

// guardRefusals is the eviction guard's refusals in this process so far.
func guardRefusals() float64 {
	total := 0.0
	for _, a := range evictguard.Actions {
		total += evictguard.Refusals(a)
	}
	return total
}

// watchProtected watches, for Timeout(preemptionWindow), that none of
// protected is disrupted and pending stays unbound, removing the pods a
// preemption deletes (no kubelet does) in namespaces. It fails at the
// first disruption. It returns the guard's refusals per minute over the
// window.
func (s *suite) watchProtected(t *testing.T, protected []*corev1.Pod, pending *corev1.Pod, namespaces ...string) float64 {
	t.Helper()
	ctx := context.Background()
	window := envtest.Timeout(preemptionWindow)
	start, before := time.Now(), guardRefusals()
	for time.Since(start) < window {
		for _, ns := range namespaces {
			if _, err := envtest.RemoveTerminatingPods(ctx, s.env.Client, ns); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range protected {
			what, err := s.disruption(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if what != "" {
				t.Fatalf("a pod Mandate admitted non-preemptible was disrupted for %s/%s: %s", pending.Namespace, pending.Name, what)
			}
		}
		got := &corev1.Pod{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(pending), got); err != nil {
			t.Fatalf("pod %s/%s: %v", pending.Namespace, pending.Name, err)
		}
		if got.Spec.NodeName != "" {
			t.Fatalf("pod %s/%s was bound to %s: the cluster has no room but by evicting protected work", pending.Namespace, pending.Name, got.Spec.NodeName)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return (guardRefusals() - before) / time.Since(start).Minutes()
}
