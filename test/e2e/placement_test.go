package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

// The placement tests' tenants, on the default kube-scheduler: dedicated
// is confined to leaf block b1 (pool b1), isolated shares no NVLink clique
// with another tenant, and plain has no placement rule.
const (
	tenantDedicated = "dedicated"
	tenantIsolated  = "isolated"
	tenantPlain     = "plain"
)

// placementModel edits the default model into the placement tests' one.
func placementModel(m map[string]any) {
	tiers := []any{"train", "build-preemptible", "build", "inference"}
	tenant := func(parent string, placement map[string]any) map[string]any {
		t := map[string]any{"parent": parent, "description": "placement test tenant",
			"quota":           map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 32, "ceiling": 96}},
			"priorityClasses": tiers, "scheduler": "default"}
		if placement != nil {
			t["placement"] = placement
		}
		return t
	}
	m["tenants"] = map[string]any{
		"org":           map[string]any{"description": "root", "quota": map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 96, "ceiling": 96}}, "priorityClasses": tiers, "scheduler": "default"},
		tenantDedicated: tenant("org", map[string]any{"allowed": "b1"}),
		tenantIsolated:  tenant("org", map[string]any{"isolation": "clique"}),
		tenantPlain:     tenant("org", nil),
	}
	topo := m["topology"].(map[string]any)
	topo["pools"] = map[string]any{"b1": map[string]any{"level": "block", "domains": []any{"b1"}}}
}

// placementNodes are the placement tests' cluster: leaf block b1 of 4
// nodes (cliques b1-c0, b1-c1 of 2 nodes each) and leaf block b2 of 8
// (cliques b2-c0 … b2-c3), H100 × 8 each.
func placementNodes() []*corev1.Node {
	var out []*corev1.Node
	for i := range 4 {
		out = append(out, fixtures.H100Node(fmt.Sprintf("h100-b1-%d", i), "b1", fmt.Sprintf("b1-c%d", i/2)))
	}
	for i := range 8 {
		out = append(out, fixtures.H100Node(fmt.Sprintf("h100-b2-%d", i), "b2", fmt.Sprintf("b2-c%d", i/2)))
	}
	return out
}

// startPlacement runs Mandate on the placement model, the cluster's nodes
// (with the pods and memory a kubelet reports), the tenants' namespaces
// and the model's PriorityClasses (mandate sync's code path), and the
// real kube-scheduler.
func startPlacement(t *testing.T) (*suite, model.Model) {
	t.Helper()
	var data map[string]any
	dir := candidateDir(t, func(m map[string]any) {
		placementModel(m)
		data = m
	})
	s := startWith(t, startOptions{config: func(c *config.Serve) { c.Policies = dir }})
	ctx := context.Background()
	c := s.env.Client
	nodes := placementNodes()
	for _, n := range nodes {
		if err := fixtures.CreateNode(ctx, c, n); err != nil {
			t.Fatal(err)
		}
		n.Labels["nvidia.com/gpu.present"] = "true"
		if err := c.Update(ctx, n); err != nil {
			t.Fatalf("unable to label node %s: %v", n.Name, err)
		}
		for _, list := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
			list[corev1.ResourcePods], list[corev1.ResourceMemory] = resource.MustParse("110"), resource.MustParse("2Ti")
		}
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatalf("unable to report node %s's pods and memory: %v", n.Name, err)
		}
	}
	for _, tenant := range []string{tenantDedicated, tenantIsolated, tenantPlain} {
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
	envtest.WaitFor(t, 20*time.Second, "every replica's cluster state to see the nodes, the pool and the namespaces", func() bool {
		for _, r := range s.replicas {
			fit, err := r.State.Snapshot().Place(topology.Request{Pods: 4, GPUsPerPod: 8, RequiredLevel: "block", Pool: "b1"})
			if err != nil || !fit.FitsNow {
				return false
			}
			for _, tenant := range []string{tenantDedicated, tenantIsolated, tenantPlain} {
				if r.State.Namespace(tenant).Labels[workload.LabelTenant] != tenant {
					return false
				}
			}
		}
		return true
	})
	envtest.StartScheduler(t, s.env)
	return s, spec
}

// TestPlacementConfinesAndIsolates, on the real kube-scheduler: the
// dedicated tenant's gang that could fit only outside its pool b1 is
// denied TOPOLOGY_NEVER_FITS naming the pool; its pods carry the pool as
// a required node affinity and land only in b1, though b2 is emptier;
// and however the isolated tenant's pods and the plain tenant's arrive,
// no NVLink clique ever holds pods of the isolated tenant and of another.
func TestPlacementConfinesAndIsolates(t *testing.T) {
	s, _ := startPlacement(t)
	ctx := context.Background()
	c := s.env.Client

	// 5 pods × 8 GPUs must share one block: b2 could hold them, b1 (4
	// nodes) never can.
	five := int32(5)
	gang := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantDedicated, Name: "too-big-for-b1"},
		Spec: batchv1.JobSpec{Parallelism: &five, Completions: &five, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}},
		}}},
	}
	err := c.Create(ctx, gang)
	if err == nil {
		t.Fatalf("dedicated's gang of 5 × 8 GPUs was admitted: it fits only outside pool b1")
	}
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Create() error = %v, want Forbidden", err)
	}
	for _, want := range []string{"must sit within one block, but the largest block in pool b1 (tenants.dedicated.placement.allowed)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("denial %q does not say %q", err, want)
		}
	}

	// Dedicated's pods: 4 × 4 GPUs, which the scheduler would spread over
	// the emptier b2 if it could.
	var dedicated []*corev1.Pod
	for i := range 4 {
		dedicated = append(dedicated, gpuPod(tenantDedicated, fmt.Sprintf("dedicated-%d", i), "build", 4, nil))
	}
	dedicated = s.waitBound(t, s.createPods(t, dedicated...))
	for _, p := range dedicated {
		if !strings.HasPrefix(p.Spec.NodeName, "h100-b1-") {
			t.Errorf("pod %s landed on %s, outside pool b1", p.Name, p.Spec.NodeName)
		}
		d, ok, err := scheduler.RecordedDirectives(p.Annotations)
		if err != nil || !ok || d.Placement == nil || d.Placement.Pool != "b1" {
			t.Errorf("pod %s records no placement directive for pool b1: %+v (%v)", p.Name, d.Placement, err)
		}
	}

	// Isolated and plain, interleaved: 2 pods × 4 GPUs each.
	var mixed []*corev1.Pod
	for i := range 2 {
		mixed = append(mixed,
			gpuPod(tenantIsolated, fmt.Sprintf("isolated-%d", i), "build", 4, nil),
			gpuPod(tenantPlain, fmt.Sprintf("plain-%d", i), "build", 4, nil))
	}
	mixed = s.waitBound(t, s.createPods(t, mixed...))

	cliqueOf := map[string]string{}
	for _, n := range placementNodes() {
		cliqueOf[n.Name] = n.Labels[topologytest.LabelClique]
	}
	tenantsIn := map[string][]string{}
	for _, p := range append(dedicated, mixed...) {
		cl := cliqueOf[p.Spec.NodeName]
		if !slices.Contains(tenantsIn[cl], p.Namespace) {
			tenantsIn[cl] = append(tenantsIn[cl], p.Namespace)
		}
	}
	for cl, tenants := range tenantsIn {
		t.Logf("clique %s holds pods of %v", cl, tenants)
		if slices.Contains(tenants, tenantIsolated) && len(tenants) > 1 {
			t.Errorf("clique %s holds pods of %v: %s is isolated at the clique level", cl, tenants, tenantIsolated)
		}
	}
	// Pinned into each other's cliques, neither side is scheduled: the
	// scheduler reports each pod unschedulable.
	var isolatedClique, plainClique string
	for cl, tenants := range tenantsIn {
		switch {
		case slices.Contains(tenants, tenantIsolated):
			isolatedClique = cl
		case slices.Contains(tenants, tenantPlain) && strings.HasPrefix(cl, "b2-"):
			plainClique = cl
		}
	}
	intruders := s.createPods(t,
		gpuPod(tenantPlain, "plain-intruder", "build", 1, map[string]string{topologytest.LabelClique: isolatedClique}),
		gpuPod(tenantIsolated, "isolated-intruder", "build", 1, map[string]string{topologytest.LabelClique: plainClique}))
	envtest.WaitFor(t, 2*time.Minute, "kube-scheduler to find no node for the pods pinned into the other side's clique", func() bool {
		for _, p := range intruders {
			got := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil || got.Spec.NodeName != "" {
				return false
			}
			if !slices.ContainsFunc(got.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
			}) {
				return false
			}
		}
		return true
	})
	for _, p := range intruders {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "" {
			t.Errorf("pod %s/%s was bound to %s, in a clique the other side holds", p.Namespace, p.Name, got.Spec.NodeName)
		}
	}

	got := &corev1.PodList{}
	if err := c.List(ctx, got, client.InNamespace(tenantIsolated)); err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Items {
		if p.Labels[scheduler.LabelIsolation] != tenantIsolated {
			t.Errorf("pod %s lacks its isolation label: %v", p.Name, p.Labels)
		}
	}
}

// TestKueueAdmitsConfinedJobOnItsPoolFlavor: tenant product, on Kueue and
// confined to leaf block b1 (placement.allowed), beside a leaf block b2 of
// four more nodes: mandate sync gives product's ClusterQueue only pool
// b1's flavors (node label leaf-block=b1), and the real Kueue controller
// admits its Job on b1's flavor, every pod of its topology assignment in
// b1.
func TestKueueAdmitsConfinedJobOnItsPoolFlavor(t *testing.T) {
	var (
		queue string
		data  map[string]any
	)
	dir := candidateDir(t, func(m map[string]any) {
		product := m["tenants"].(map[string]any)["product"].(map[string]any)
		product["scheduler"] = "kueue"
		product["placement"] = map[string]any{"allowed": "b1"}
		queue = product["queue"].(string)
		m["topology"].(map[string]any)["pools"] = map[string]any{"b1": map[string]any{"level": "block", "domains": []any{"b1"}}}
		data = m
	})
	s := startWith(t, startOptions{env: []envtest.Option{envtest.WithKueueCRDs()}, config: func(c *config.Serve) {
		c.Bundle.Source = fixtures.BundleFile(t, dir, "kueue-pool-r1")
	}})
	s.populate(t)
	ctx := context.Background()
	c := s.env.Client
	for i := range 4 {
		n := fixtures.H100Node(fmt.Sprintf("h100-b2-%d", i), "b2", "b2-c0")
		if err := fixtures.CreateNode(ctx, c, n); err != nil {
			t.Fatal(err)
		}
		n.Labels["nvidia.com/gpu.present"] = "true"
		if err := c.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		for _, list := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
			list[corev1.ResourcePods], list[corev1.ResourceMemory] = resource.MustParse("110"), resource.MustParse("2Ti")
		}
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	envtest.StartKueue(t, s.env)
	kueueNodes(t, s)

	spec := syncKueue(t, s, data)
	clusterQueue := spec.QueueName("product")
	cq := &unstructured.Unstructured{}
	cq.SetGroupVersionKind(kueueClusterQueueGVK)
	waitKueue(t, "ClusterQueue "+clusterQueue+" to be active", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKey{Name: clusterQueue}, cq); err != nil {
			return false, err.Error()
		}
		return conditionTrue(cq, "Active"), fmt.Sprintf("status %v", cq.Object["status"])
	})
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _, _ := unstructured.NestedSlice(g.(map[string]any), "flavors")
		for _, f := range flavors {
			if name := f.(map[string]any)["name"].(string); !strings.HasPrefix(name, "mandate-pool-b1") {
				t.Errorf("ClusterQueue %s offers flavor %s, outside pool b1", clusterQueue, name)
			}
		}
	}

	job := s.create(t, kueueAdmittedJob)
	var wl *unstructured.Unstructured
	waitKueue(t, "Kueue to admit the Job's Workload", func() (bool, string) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kueueWorkloadGVK)
		if err := c.List(ctx, list, client.InNamespace("product")); err != nil {
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
		return conditionTrue(wl, "Admitted"), fmt.Sprintf("Workload %s status %v", wl.GetName(), wl.Object["status"])
	})
	if got, _, _ := unstructured.NestedString(wl.Object, "spec", "queueName"); got != queue {
		t.Errorf("Workload's queue = %q, want %s", got, queue)
	}
	assignments, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	if len(assignments) != 1 {
		t.Fatalf("Workload has %d pod set assignments, want 1: %v", len(assignments), assignments)
	}
	psa := assignments[0].(map[string]any)
	flavor, _, _ := unstructured.NestedString(psa, "flavors", "nvidia.com/gpu")
	if !strings.HasPrefix(flavor, "mandate-pool-b1") {
		t.Errorf("GPUs admitted on flavor %q, want pool b1's", flavor)
	}
	rf := &unstructured.Unstructured{}
	rf.SetGroupVersionKind(schedsync.ResourceFlavorKind.GVK)
	if err := c.Get(ctx, client.ObjectKey{Name: flavor}, rf); err != nil {
		t.Fatalf("flavor %q: %v", flavor, err)
	}
	if got, _, _ := unstructured.NestedString(rf.Object, "spec", "nodeLabels", topologytest.LabelLeafBlock); got != "b1" {
		t.Errorf("flavor %s selects %s=%q, want b1", flavor, topologytest.LabelLeafBlock, got)
	}
	if ta, ok, _ := unstructured.NestedMap(psa, "topologyAssignment"); ok {
		pods, err := hostPods(ta)
		if err != nil {
			t.Fatal(err)
		}
		for host := range pods {
			if !strings.HasPrefix(host, "h100-b1-") {
				t.Errorf("Kueue's topology assignment puts a pod on %s, outside b1", host)
			}
		}
		t.Logf("Kueue admitted %s on flavor %s, pods per node %v", wl.GetName(), flavor, pods)
	}
}
