package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/simulate/replay"
)

// agreementTenants is a Kueue tree of two tenants in one cohort: lab (16
// GPUs, guaranteed and ceiling), alpha and beta (8 guaranteed each, 16
// ceiling: each may borrow the other's 8). mandate sync makes lab a Cohort
// and alpha, beta ClusterQueues of nominal quota 8, borrowing limit 8.
func agreementTenants(m map[string]any) {
	gpus := func(guaranteed, ceiling int) map[string]any {
		return map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": guaranteed, "ceiling": ceiling}}
	}
	tenants := m["tenants"].(map[string]any)
	tenants["lab"] = map[string]any{"scheduler": "kueue", "queue": "lab", "priorityClasses": []any{"train", "build"}, "quota": gpus(16, 16)}
	tenants["alpha"] = map[string]any{"parent": "lab", "queue": "alpha", "quota": gpus(8, 16)}
	tenants["beta"] = map[string]any{"parent": "lab", "queue": "beta", "quota": gpus(8, 16)}
}

// agreementTrace: beta borrows alpha's guarantee (b1: 4 pods × 4 GPUs,
// train, 8 over beta's guarantee: preemptible); alpha then asks for its
// guarantee (a1: 2 × 4, build), which is reclaimed from b1; b1, queued
// again, is a gang that must wait (16 GPUs, 8 free in the cohort) while
// b2 (2 × 4, inside beta's guarantee) starts past it.
var agreementTrace = []replay.Job{
	{Name: "b1", Submit: 0, Duration: 1e6, Tenant: "beta", Pods: 4, GPUsPerPod: 4, PriorityClass: "train"},
	{Name: "a1", Submit: 10, Duration: 1e6, Tenant: "alpha", Pods: 2, GPUsPerPod: 4, PriorityClass: "build"},
	{Name: "b2", Submit: 20, Duration: 1e6, Tenant: "beta", Pods: 2, GPUsPerPod: 4, PriorityClass: "train"},
}

// agreementJob is a trace job as a Job a user creates in its tenant's
// namespace.
func agreementJob(j replay.Job) string {
	return fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
spec:
  parallelism: %d
  completions: %d
  template:
    spec:
      restartPolicy: Never
      priorityClassName: %s
      containers:
      - name: main
        image: ubuntu
        resources:
          requests: {cpu: "1", memory: 1Gi}
          limits: {nvidia.com/gpu: %d}
`, j.Name, j.Tenant, j.Pods, j.Pods, j.PriorityClass, j.GPUsPerPod)
}

// TestSimulationAgreesWithKueue (issue 24's acceptance): on a small
// scenario — two tenants in a cohort, borrowing, a preemptible
// over-guarantee workload, a gang that must wait — the workloads
// `mandate simulate` starts and evicts, and in which order, are the ones
// the real Kueue controller (v0.19.2, envtest.StartKueue) admits and
// evicts on the queues mandate sync made from the same model, the Jobs
// created through Mandate's webhook. After each arrival, Kueue's admitted
// set must become the simulation's running set, and the jobs evicted so
// far must be the same.
func TestSimulationAgreesWithKueue(t *testing.T) {
	ctx := context.Background()
	var data map[string]any
	dir := candidateDir(t, func(m map[string]any) {
		agreementTenants(m)
		data = m
	})

	// The simulation, under the same policies, on the test cluster's
	// eight GPU nodes.
	out := simulateScenario(t, dir, replay.Scenario{Jobs: agreementTrace})
	// The hand-worked timeline: the test's premise, before Kueue is asked.
	var got []string
	for _, e := range out.Timeline {
		got = append(got, e.What+" "+e.Job)
	}
	if want := []string{"start b1", "evict b1", "start a1", "start b2"}; !slices.Equal(got, want) {
		t.Fatalf("the simulation's timeline is %v, want %v", got, want)
	}

	// Kueue, on mandate sync's objects for the same model.
	s, _ := startKueueCohort(t, startOptions{}, dir, "kueue-agreement-r1", data)

	// Each arrival in turn; then Kueue's admitted set must become what
	// the simulation runs after that arrival, and the evicted ones the
	// same.
	uids := map[string]string{} // Job name → UID
	for _, j := range agreementTrace {
		job := s.create(t, agreementJob(j))
		uids[j.Name] = string(job.GetUID())
		running, evicted := out.At(j.Submit)
		waitKueue(t, fmt.Sprintf("Kueue to admit %v and have evicted %v after %s arrived, as the simulation does", running, evicted, j.Name), func() (bool, string) {
			admitted, kEvicted, state := kueueState(ctx, t, s, uids)
			return slices.Equal(admitted, running) && slices.Equal(kEvicted, evicted),
				fmt.Sprintf("Kueue admitted %v, evicted %v; %s", admitted, kEvicted, state)
		})
	}
	// The gang that must wait has been put back in its queue by Kueue
	// (Requeued) and tried again, pending for quota: the cohort's 16 GPUs
	// are a1's and b2's.
	waitKueue(t, "b1's Workload to be pending again in its queue after its eviction", func() (bool, string) {
		wl := workloadOf(ctx, t, s, "beta", uids["b1"])
		if wl == nil {
			return false, "no Workload for b1"
		}
		pending := slices.ContainsFunc(conditionsOf(wl), func(c metav1.Condition) bool {
			return c.Type == "QuotaReserved" && c.Status == metav1.ConditionFalse && c.Reason == "Pending"
		})
		return conditionTrue(wl, "Requeued") && pending, fmt.Sprintf("status %v", wl.Object["status"])
	})
	running, evicted := out.Final()
	admitted, kEvicted, state := kueueState(ctx, t, s, uids)
	if !slices.Equal(admitted, running) || !slices.Equal(kEvicted, evicted) {
		t.Fatalf("at the end Kueue admitted %v and evicted %v, the simulation runs %v and evicted %v; %s", admitted, kEvicted, running, evicted, state)
	}
	t.Logf("the simulation and Kueue agree: %v; running %v, evicted %v", got, running, evicted)
}

// kueueState is the Jobs whose Workloads Kueue admits now and those it
// evicted at least once (their Workload's Evicted condition was set, or
// it records a preemption), sorted, and a description for messages.
func kueueState(ctx context.Context, t *testing.T, s *suite, uids map[string]string) (admitted, evicted []string, state string) {
	t.Helper()
	var desc []string
	for name, uid := range uids {
		wl := workloadOf(ctx, t, s, "", uid)
		if wl == nil {
			desc = append(desc, name+": no Workload yet")
			continue
		}
		if conditionTrue(wl, "Admitted") {
			admitted = append(admitted, name)
		}
		if conditionTrue(wl, "Evicted") || conditionTrue(wl, "Preempted") || requeued(wl) {
			evicted = append(evicted, name)
		}
		desc = append(desc, fmt.Sprintf("%s: %v", name, conditionsOf(wl)))
	}
	sort.Strings(admitted)
	sort.Strings(evicted)
	sort.Strings(desc)
	return admitted, evicted, strings.Join(desc, "; ")
}

// requeued says whether Kueue counted an eviction of the Workload
// (status.requeueState or a Preempted/Evicted condition now False: it was
// evicted and queued again).
func requeued(wl *unstructured.Unstructured) bool {
	if _, ok, _ := unstructured.NestedMap(wl.Object, "status", "requeueState"); ok {
		return true
	}
	for _, c := range conditionsOf(wl) {
		if c.Type == "Evicted" || c.Type == "Preempted" {
			return true
		}
	}
	return false
}

func conditionsOf(obj *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []metav1.Condition
	for _, c := range raw {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		st, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		out = append(out, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(st), Reason: reason})
	}
	return out
}

// workloadOf is the Workload Kueue made for the Job of uid (in namespace,
// "" for any), or nil.
func workloadOf(ctx context.Context, t *testing.T, s *suite, namespace, uid string) *unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueueWorkloadGVK)
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := s.env.Client.List(ctx, list, opts...); err != nil {
		t.Fatalf("list Workloads: %v", err)
	}
	for i := range list.Items {
		if slices.ContainsFunc(list.Items[i].GetOwnerReferences(), func(o metav1.OwnerReference) bool { return string(o.UID) == uid }) {
			return &list.Items[i]
		}
	}
	return nil
}
