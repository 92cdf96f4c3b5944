package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// kueueAdmittedJob is two pods of 8 GPUs, 4 CPUs and 16Gi of memory, as
// an ordinary Job asks: the default model requires them in one NVLink
// clique (four of the test nodes). It is created as a user would write it,
// without suspend: Kueue's Job webhook runs before Mandate's adds the queue
// label, so Mandate holds it for Kueue.
const kueueAdmittedJob = `
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune-admitted
  namespace: product
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: ubuntu
        resources:
          requests: {cpu: "4", memory: 16Gi}
          limits: {nvidia.com/gpu: 8}
`

var (
	kueueWorkloadGVK     = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}
	kueueClusterQueueGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "ClusterQueue"}
)

// TestKueueAdmitsMandatedJob: Kueue's real controller (v0.19.2, built by
// hack/envtest-assets.sh and run by envtest.StartKueue, its webhooks
// registered) admits the suspended Job Mandate mutated for a tenant on
// Kueue — through the LocalQueue, ClusterQueue, ResourceFlavors, Topology
// and WorkloadPriorityClasses that mandate sync's code path made from the
// model, no Kueue object written by hand, although the Job asks for cpu
// and memory besides the GPUs the model governs — with a Topology-Aware
// Scheduling placement that honours the topology Mandate required (one
// clique), and unsuspends it. Mandate's own usage never counts it: it is
// preemptible (its class, build-preemptible, is the default), and Kueue
// holds the quota of borrowed work (a non-preemptible one holds its
// guarantee in Mandate's ledger: TestKueueGuaranteedJobHolds).
func TestKueueAdmitsMandatedJob(t *testing.T) {
	// What Mandate renders, from the model: tenant product's queue, the
	// priority tiers (as WorkloadPriorityClasses).
	var (
		queue string
		tiers = map[string]int64{}
		data  map[string]any
	)
	dir := candidateDir(t, func(m map[string]any) {
		product := m["tenants"].(map[string]any)["product"].(map[string]any)
		product["scheduler"] = "kueue"
		queue = product["queue"].(string)
		for name, p := range m["priorities"].(map[string]any) {
			tiers[name] = int64(p.(map[string]any)["value"].(float64))
		}
		data = m
	})
	s := startWith(t, startOptions{env: []envtest.Option{envtest.WithKueueCRDs()}, config: func(c *config.Serve) {
		c.Bundle.Source = fixtures.BundleFile(t, dir, "kueue-admit-r1")
	}})
	s.populate(t)
	ctx := context.Background()
	envtest.StartKueue(t, s.env)
	kueueNodes(t, s)

	spec := syncKueue(t, s, data)
	clusterQueue := spec.QueueName("product")
	lq := &unstructured.Unstructured{}
	lq.SetGroupVersionKind(schedsync.LocalQueueKind.GVK)
	if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: "product", Name: queue}, lq); err != nil {
		t.Fatalf("mandate sync made no LocalQueue %s in product: %v", queue, err)
	}
	cq := &unstructured.Unstructured{}
	cq.SetGroupVersionKind(kueueClusterQueueGVK)
	waitKueue(t, "ClusterQueue "+clusterQueue+" to be active", func() (bool, string) {
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: clusterQueue}, cq); err != nil {
			return false, err.Error()
		}
		return conditionTrue(cq, "Active"), fmt.Sprintf("status %v", cq.Object["status"])
	})

	before := s.srv.State.Usage("product")["product"]["nvidia.com/gpu"]
	job := s.create(t, kueueAdmittedJob)
	if suspend, _, _ := unstructured.NestedBool(job.Object, "spec", "suspend"); !suspend {
		t.Fatal("the Job was stored unsuspended: its pods would start before Kueue admitted it, counted by no one")
	}
	labels := job.GetLabels()
	class := labels[scheduler.LabelKueuePriorityClass]
	if _, ok := tiers[class]; labels[scheduler.LabelKueueQueueName] != queue || !ok {
		t.Fatalf("Job labels %v: want Mandate's queue-name %s and a priority-class of the model", labels, queue)
	}
	required, _, _ := unstructured.NestedString(job.Object, "spec", "template", "metadata", "annotations", scheduler.AnnotationKueueRequiredTopology)
	if required != topologytest.LabelClique {
		t.Fatalf("pod template's %s = %q, want the clique level %s", scheduler.AnnotationKueueRequiredTopology, required, topologytest.LabelClique)
	}

	// Kueue makes a Workload for the Job, admits it and unsuspends the Job.
	var wl *unstructured.Unstructured
	waitKueue(t, "Kueue to admit the Job's Workload and unsuspend the Job", func() (bool, string) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kueueWorkloadGVK)
		if err := s.env.Client.List(ctx, list, client.InNamespace("product")); err != nil {
			return false, err.Error()
		}
		wl = nil
		for i := range list.Items {
			if slices.ContainsFunc(list.Items[i].GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == job.GetUID() }) {
				wl = &list.Items[i]
			}
		}
		if wl == nil {
			return false, "no Workload owned by the Job"
		}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err.Error()
		}
		suspend, _, _ := unstructured.NestedBool(job.Object, "spec", "suspend")
		return conditionTrue(wl, "Admitted") && !suspend,
			fmt.Sprintf("Job suspend=%v; Workload %s status %v", suspend, wl.GetName(), wl.Object["status"])
	})

	if got, _, _ := unstructured.NestedString(wl.Object, "spec", "priorityClassRef", "name"); got != class {
		t.Errorf("Workload's priority class = %q, want Mandate's %s", got, class)
	}
	if got, _, _ := unstructured.NestedInt64(wl.Object, "spec", "priority"); got != tiers[class] {
		t.Errorf("Workload's priority = %d, want %s's %d", got, class, tiers[class])
	}
	if got, _, _ := unstructured.NestedString(wl.Object, "spec", "queueName"); got != queue {
		t.Errorf("Workload's queue = %q, want Mandate's %s", got, queue)
	}
	if got, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue"); got != clusterQueue {
		t.Errorf("Workload admitted into ClusterQueue %q, want mandate sync's %s", got, clusterQueue)
	}
	assignments, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	if len(assignments) != 1 {
		t.Fatalf("Workload has %d pod set assignments, want 1: %v", len(assignments), assignments)
	}
	psa := assignments[0].(map[string]any)
	// GPUs, cpu and memory come from one flavor mandate sync made, whose
	// node labels the admitted Job's pods are then pinned to.
	flavor, _, _ := unstructured.NestedString(psa, "flavors", "nvidia.com/gpu")
	for _, r := range []string{"cpu", "memory"} {
		if got, _, _ := unstructured.NestedString(psa, "flavors", r); got != flavor {
			t.Errorf("%s assigned flavor %q, GPUs %q: want one flavor for the pod set", r, got, flavor)
		}
	}
	rf := &unstructured.Unstructured{}
	rf.SetGroupVersionKind(schedsync.ResourceFlavorKind.GVK)
	if err := s.env.Client.Get(ctx, client.ObjectKey{Name: flavor}, rf); err != nil {
		t.Fatalf("GPUs assigned flavor %q: %v", flavor, err)
	}
	if got := rf.GetLabels()[config.LabelManagedBy]; got != config.ManagedBy {
		t.Errorf("flavor %s is managed by %q, want mandate sync's", flavor, got)
	}
	flavorLabels, _, _ := unstructured.NestedStringMap(rf.Object, "spec", "nodeLabels")
	ta, ok, _ := unstructured.NestedMap(psa, "topologyAssignment")
	if !ok {
		t.Fatalf("Workload admitted without a topology assignment: %v", psa)
	}
	pods, err := hostPods(ta)
	if err != nil {
		t.Fatal(err)
	}
	cliques := map[string]bool{}
	total := 0
	for host, n := range pods {
		node := &corev1.Node{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: host}, node); err != nil {
			t.Fatalf("topology assignment names node %s: %v", host, err)
		}
		cliques[node.Labels[topologytest.LabelClique]] = true
		total += n
	}
	if total != 2 || len(cliques) != 1 {
		t.Errorf("topology assignment %v puts %d pods in cliques %v: want both pods in one clique, as Mandate required", pods, total, cliques)
	}
	t.Logf("Kueue admitted Workload %s into ClusterQueue %s, flavor %s, pods per node %v (cliques %v)", wl.GetName(), clusterQueue, flavor, pods, cliques)

	// Kueue's admission changed the Job — unsuspended it, gave its pods
	// the flavor's node selector and the gate its TAS ungater lifts once
	// it has placed them — under Mandate's validating webhook, which let
	// it; Mandate's keys are still there.
	selector, _, _ := unstructured.NestedStringMap(job.Object, "spec", "template", "spec", "nodeSelector")
	for k, v := range flavorLabels {
		if selector[k] != v {
			t.Errorf("admitted Job's node selector %v lacks flavor %s's %s=%s", selector, flavor, k, v)
		}
	}
	gates, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "schedulingGates")
	if !slices.ContainsFunc(gates, func(g any) bool { return g.(map[string]any)["name"] == "kueue.x-k8s.io/topology" }) {
		t.Errorf("admitted Job's pod template has scheduling gates %v, want Kueue's TAS gate kueue.x-k8s.io/topology", gates)
	}
	if got := job.GetLabels()[scheduler.LabelKueueQueueName]; got != queue {
		t.Errorf("admitted Job's queue-name = %q, want %s", got, queue)
	}
	if got, _, _ := unstructured.NestedString(job.Object, "spec", "template", "metadata", "annotations", scheduler.AnnotationKueueRequiredTopology); got != required {
		t.Errorf("admitted Job's %s = %q, want Mandate's %s", scheduler.AnnotationKueueRequiredTopology, got, required)
	}
	if got := s.srv.State.Usage("product")["product"]["nvidia.com/gpu"]; got != before {
		t.Errorf("product's usage went from %+v to %+v: a preemptible Kueue Job is Kueue's quota", before, got)
	}
}

// syncKueue makes Kueue's objects as mandate sync makes them — its code
// path, on the model data of the bundle serve runs, for Kueue — and
// returns that model.
func syncKueue(t *testing.T, s *suite, data map[string]any) model.Model {
	t.Helper()
	ctx := context.Background()
	spec, err := model.FromData(map[string]any{"mandate": map[string]any{"model": data}})
	if err != nil {
		t.Fatal(err)
	}
	syncer := schedsync.Syncer{Client: s.env.Client}
	plan, err := syncer.PlanModel(ctx, spec, schedsync.Options{Schedulers: []string{"kueue"}})
	if err != nil {
		t.Fatalf("mandate sync's plan: %v", err)
	}
	if err := syncer.Apply(ctx, plan, false); err != nil {
		t.Fatalf("mandate sync's apply: %v", err)
	}
	return spec
}

// kueueNodes readies the test cluster's eight GPU nodes for Kueue's
// Topology-Aware Scheduling, which counts pods and memory against the
// nodes' allocatable, as a kubelet reports them; NVIDIA's GPU feature
// discovery marks GPU nodes nvidia.com/gpu.present.
func kueueNodes(t *testing.T, s *suite) {
	t.Helper()
	ctx := context.Background()
	for i := range 8 {
		node := &corev1.Node{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: fixtures.GPUNode(i).Name}, node); err != nil {
			t.Fatal(err)
		}
		node.Labels["nvidia.com/gpu.present"] = "true"
		if err := s.env.Client.Update(ctx, node); err != nil {
			t.Fatalf("unable to label node %s: %v", node.Name, err)
		}
		for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
			list[corev1.ResourcePods], list[corev1.ResourceMemory] = resource.MustParse("110"), resource.MustParse("2Ti")
		}
		if err := s.env.Client.Status().Update(ctx, node); err != nil {
			t.Fatalf("unable to report node %s's pods and memory: %v", node.Name, err)
		}
	}
}

// waitKueue waits (deadline scaled by MANDATE_TEST_TIMEOUT_SCALE) for cond,
// failing with what cond last said (Kueue's log follows, from StartKueue).
func waitKueue(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	timeout := envtest.Timeout(time.Minute)
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (raise %s on a slow machine); last: %s",
				timeout, what, envtest.TimeoutScaleEnv, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// conditionTrue says whether obj's status has condition typ True.
func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	return meta.IsStatusConditionTrue(conditionsOf(obj), typ)
}

// hostPods decodes a Kueue v1beta2 topologyAssignment into pods per node
// (its lowest level must be the hostname).
func hostPods(ta map[string]any) (map[string]int, error) {
	levels, _, _ := unstructured.NestedStringSlice(ta, "levels")
	if len(levels) == 0 || levels[len(levels)-1] != topologytest.LabelHostname {
		return nil, fmt.Errorf("topology assignment levels %v do not end with %s", levels, topologytest.LabelHostname)
	}
	last := len(levels) - 1
	out := map[string]int{}
	slicesRaw, _, _ := unstructured.NestedSlice(ta, "slices")
	for _, raw := range slicesRaw {
		sl := raw.(map[string]any)
		count, _, _ := unstructured.NestedInt64(sl, "domainCount")
		values, _, _ := unstructured.NestedSlice(sl, "valuesPerLevel")
		if len(values) != len(levels) {
			return nil, fmt.Errorf("topology assignment slice %v has %d levels' values, want %d", sl, len(values), len(levels))
		}
		hostValues := values[last].(map[string]any)
		hosts := make([]string, count)
		if u, ok := hostValues["universal"].(string); ok {
			for i := range hosts {
				hosts[i] = u
			}
		} else {
			prefix, _, _ := unstructured.NestedString(hostValues, "individual", "prefix")
			suffix, _, _ := unstructured.NestedString(hostValues, "individual", "suffix")
			roots, _, _ := unstructured.NestedStringSlice(hostValues, "individual", "roots")
			if len(roots) != int(count) {
				return nil, fmt.Errorf("topology assignment slice %v: %d roots for %d domains", sl, len(roots), count)
			}
			for i, r := range roots {
				hosts[i] = strings.Join([]string{prefix, r, suffix}, "")
			}
		}
		universal, hasUniversal, _ := unstructured.NestedInt64(sl, "podCounts", "universal")
		individual, _, _ := unstructured.NestedSlice(sl, "podCounts", "individual")
		for i, h := range hosts {
			switch {
			case hasUniversal:
				out[h] += int(universal)
			case i < len(individual):
				n, _ := individual[i].(int64)
				out[h] += int(n)
			default:
				return nil, fmt.Errorf("topology assignment slice %v has no pod count for domain %d", sl, i)
			}
		}
	}
	return out, nil
}
