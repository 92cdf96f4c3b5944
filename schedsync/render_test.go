package schedsync

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/policies"
)

func exampleSpec(t *testing.T) model.Model {
	t.Helper()
	b, err := fs.ReadFile(policies.FS, "mandate/model/data.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	s, err := model.FromData(map[string]any{"mandate": map[string]any{"model": m}})
	require.NoError(t, err)
	return s
}

func find(t *testing.T, objs []Object, k Kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GroupVersionKind() == k.GVK && o.GetNamespace() == ns && o.GetName() == name {
			return o.Unstructured
		}
	}
	t.Fatalf("no %s %s/%s rendered", k.GVK.Kind, ns, name)
	return nil
}

func field(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	require.NoError(t, err)
	if !ok {
		return nil
	}
	return v
}

// TestRenderExample pins the mapping table of the README ("From model to
// schedulers") on the example model.
func TestRenderExample(t *testing.T) {
	s := exampleSpec(t)
	assert.Equal(t, []string{KAI, Volcano}, SchedulersOf(s))
	cluster := Cluster{
		NodeLabels: map[string]map[string]string{
			"n1": {"topology.kubernetes.io/zone": "z", "mandate.dev/spine-block": "s", "mandate.dev/leaf-block": "b", "nvidia.com/gpu.clique": "c1"},
			"n2": {"topology.kubernetes.io/zone": "z", "mandate.dev/spine-block": "s", "mandate.dev/leaf-block": "b"},
		},
		TenantNamespaces: map[string][]string{"research-llm": {"llm"}, "research": {"research"}},
	}
	objs, err := Render(s, cluster, Options{Schedulers: AllSchedulers()})
	require.NoError(t, err)

	for _, tc := range []struct {
		obj  *unstructured.Unstructured
		path []string
		want any
	}{
		{find(t, objs, PriorityClassKind, "", "train"), []string{"preemptionPolicy"}, "Never"},
		{find(t, objs, PriorityClassKind, "", "inference"), []string{"preemptionPolicy"}, "PreemptLowerPriority"},
		{find(t, objs, PriorityClassKind, "", "inference"), []string{"value"}, int64(125)},
		// Borrowed work runs below every guaranteed tier and preempts nothing.
		{find(t, objs, PriorityClassKind, "", "build-borrowed"), []string{"value"}, int64(98)},
		{find(t, objs, PriorityClassKind, "", "build-borrowed"), []string{"preemptionPolicy"}, "Never"},
		{find(t, objs, PriorityClassKind, "", "inference-borrowed"), []string{"value"}, int64(99)},
		{find(t, objs, PriorityClassKind, "", "build"), []string{"preemptionPolicy"}, "PreemptLowerPriority"},

		{find(t, objs, VolcanoQueueKind, "", "research-llm"), []string{"spec", "parent"}, "research"},
		{find(t, objs, VolcanoQueueKind, "", "research-llm"), []string{"spec", "capability", "nvidia.com/gpu"}, "256"},
		{find(t, objs, VolcanoQueueKind, "", "research-llm"), []string{"spec", "guarantee", "resource", "nvidia.com/gpu"}, "96"},
		{find(t, objs, VolcanoQueueKind, "", "research-llm"), []string{"spec", "deserved", "nvidia.com/gpu"}, "96"},
		{find(t, objs, VolcanoQueueKind, "", "research-llm"), []string{"spec", "reclaimable"}, true},
		{find(t, objs, VolcanoQueueKind, "", "helix"), []string{"spec", "parent"}, nil},
		{find(t, objs, VolcanoQueueKind, "", "product"), []string{"spec", "capability", "nvidia.com/mig-1g.10gb"}, "56"},

		{find(t, objs, KAIQueueKind, "", "research-llm"), []string{"spec", "parentQueue"}, "research"},
		{find(t, objs, KAIQueueKind, "", "research-llm"), []string{"spec", "resources", "gpu", "quota"}, int64(96)},
		{find(t, objs, KAIQueueKind, "", "research-llm"), []string{"spec", "resources", "gpu", "limit"}, int64(256)},
		{find(t, objs, KAIQueueKind, "", "research-llm"), []string{"spec", "priority"}, int64(100)}, // inherits research's classes
		{find(t, objs, KAIQueueKind, "", "product"), []string{"spec", "priority"}, int64(125)},
		{find(t, objs, KAITopologyKind, "", "helix-fabric"), []string{"spec", "levels"}, []any{
			map[string]any{"nodeLabel": "topology.kubernetes.io/zone"}, map[string]any{"nodeLabel": "mandate.dev/spine-block"},
			map[string]any{"nodeLabel": "mandate.dev/leaf-block"}, map[string]any{"nodeLabel": "nvidia.com/gpu.clique"},
			map[string]any{"nodeLabel": "kubernetes.io/hostname"}}},

		// helix: 320 guaranteed, children 128+128+8 → 56 of its own.
		{find(t, objs, CohortKind, "", "helix"), []string{"spec", "parentName"}, nil},
		{find(t, objs, CohortKind, "", "helix"), []string{"spec", "resourceGroups"}, []any{map[string]any{
			"coveredResources": []any{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"},
			"flavors": []any{map[string]any{"name": "mandate-any-gpu", "resources": []any{
				map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(56)},
				map[string]any{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": int64(28)}}}}}}},
		// research: 128 guaranteed, children 96+16 → 16 own; may borrow 320−128.
		{find(t, objs, CohortKind, "", "research"), []string{"spec", "parentName"}, "helix"},
		{find(t, objs, CohortKind, "", "research"), []string{"spec", "resourceGroups"}, []any{map[string]any{
			"coveredResources": []any{"nvidia.com/gpu"},
			"flavors": []any{map[string]any{"name": "mandate-any-gpu", "resources": []any{
				map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(16), "borrowingLimit": int64(192)}}}}}}},
		{find(t, objs, ClusterQueueKind, "", "research-llm"), []string{"spec", "cohortName"}, "research"},
		// A ClusterQueue also covers cpu, memory and ephemeral storage,
		// unlimited, so Kueue admits pods that ask for them.
		{find(t, objs, ClusterQueueKind, "", "research-llm"), []string{"spec", "resourceGroups"}, []any{map[string]any{
			"coveredResources": []any{"cpu", "ephemeral-storage", "memory", "nvidia.com/gpu"},
			"flavors": []any{map[string]any{"name": "mandate-any-gpu", "resources": append(ungovernedEntries(),
				map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(96), "borrowingLimit": int64(160)})}}}}},
		{find(t, objs, ClusterQueueKind, "", "research-llm"), []string{"spec", "preemption"},
			map[string]any{"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}},
		{find(t, objs, LocalQueueKind, "llm", "research-llm"), []string{"spec", "clusterQueue"}, "research-llm"},
		{find(t, objs, WorkloadPriorityKind, "", "build"), []string{"value"}, int64(100)},
		{find(t, objs, ResourceFlavorKind, "", "mandate-any-gpu"), []string{"spec", "topologyName"}, "helix-fabric"},
		{find(t, objs, KueueTopologyKind, "", "helix-fabric"), []string{"spec", "levels"}, []any{
			map[string]any{"nodeLabel": "topology.kubernetes.io/zone"}, map[string]any{"nodeLabel": "mandate.dev/spine-block"},
			map[string]any{"nodeLabel": "mandate.dev/leaf-block"}, map[string]any{"nodeLabel": "nvidia.com/gpu.clique"},
			map[string]any{"nodeLabel": "kubernetes.io/hostname"}}},
	} {
		assert.Equal(t, tc.want, field(t, tc.obj, tc.path...), "%s %s %v", tc.obj.GetKind(), tc.obj.GetName(), tc.path)
	}
	for _, o := range objs {
		assert.True(t, isMandates(o.Unstructured), "%s %s carries Mandate's labels", o.GetKind(), o.GetName())
	}
	// An inner tenant has a Cohort, not a ClusterQueue, so its namespaces
	// get no LocalQueue.
	for _, o := range objs {
		assert.False(t, o.GroupVersionKind() == LocalQueueKind.GVK && o.GetNamespace() == "research", "LocalQueue in research")
	}
}

// TestHyperNodeTiers: tiers count as the Volcano adapter's
// highestTierAllowed does (topology.rego: the narrowest level is tier 0,
// the node), a clique selects its nodes by its whole label path, and a node
// without a clique label joins its leaf block directly.
func TestHyperNodeTiers(t *testing.T) {
	s := exampleSpec(t)
	objs := hyperNodes(s, Cluster{NodeLabels: map[string]map[string]string{
		"n1": {"topology.kubernetes.io/zone": "z", "mandate.dev/spine-block": "s", "mandate.dev/leaf-block": "b", "nvidia.com/gpu.clique": "c1"},
		"n2": {"topology.kubernetes.io/zone": "z", "mandate.dev/spine-block": "s", "mandate.dev/leaf-block": "b"},
		"n3": {"kubernetes.io/hostname": "n3"}, // no topology labels: in no domain
	}})
	byTier := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byTier[field(t, o.Unstructured, "spec", "tierName").(string)] = o.Unstructured
	}
	require.Len(t, byTier, 4)
	for level, tier := range map[string]int64{"clique": 1, "block": 2, "spine": 3, "zone": 4} {
		assert.Equal(t, tier, field(t, byTier[level], "spec", "tier"), level)
	}
	assert.Equal(t, []any{map[string]any{"type": "Node", "selector": map[string]any{"labelMatch": map[string]any{"matchLabels": map[string]any{
		"topology.kubernetes.io/zone": "z", "mandate.dev/spine-block": "s", "mandate.dev/leaf-block": "b", "nvidia.com/gpu.clique": "c1"}}}}},
		field(t, byTier["clique"], "spec", "members"))
	assert.Equal(t, []any{
		map[string]any{"type": "HyperNode", "selector": map[string]any{"exactMatch": map[string]any{"name": byTier["clique"].GetName()}}},
		map[string]any{"type": "Node", "selector": map[string]any{"exactMatch": map[string]any{"name": "n2"}}},
	}, field(t, byTier["block"], "spec", "members"))
	// Members come before their parents, so Volcano never sees a dangling name.
	assert.Equal(t, "clique", field(t, objs[0].Unstructured, "spec", "tierName"))
}

// ungovernedEntries are the resources of every ClusterQueue flavor that
// Mandate does not govern, as kueueObjects renders them (sorted by name).
func ungovernedEntries() []any {
	return []any{
		map[string]any{"name": "cpu", "nominalQuota": int64(1_000_000)},
		map[string]any{"name": "ephemeral-storage", "nominalQuota": int64(1 << 50)},
		map[string]any{"name": "memory", "nominalQuota": int64(1 << 50)},
	}
}

// A tenant on Kueue confined to a pool: its ClusterQueue offers only the
// pool's flavors (one per product it has quota for, and the any-product
// one), each selecting the pool's nodes; a pool of two domains has a
// flavor per domain. Other tenants keep the cluster-wide flavors.
func TestKueuePoolFlavors(t *testing.T) {
	s := exampleSpec(t)
	s.Topology.Pools = map[string]model.NodePool{
		"b1":   {Level: "block", Domains: []string{"b1"}},
		"both": {Level: "block", Domains: []string{"b1", "b2"}},
	}
	for name, pool := range map[string]string{"product": "b1", "platform": "both"} {
		t := s.Tenants[name]
		t.Scheduler = Kueue
		t.Placement.Allowed = pool
		s.Tenants[name] = t
	}
	objs, err := Render(s, Cluster{}, Options{Schedulers: []string{Kueue}})
	require.NoError(t, err)
	flavorsOf := func(queue string) []string {
		var out []string
		for _, g := range field(t, find(t, objs, ClusterQueueKind, "", queue), "spec", "resourceGroups").([]any) {
			for _, f := range g.(map[string]any)["flavors"].([]any) {
				out = append(out, f.(map[string]any)["name"].(string))
			}
		}
		return out
	}
	assert.Equal(t, []string{"mandate-pool-b1", "mandate-pool-b1-nvidia-b200", "mandate-pool-b1-nvidia-h100-80gb-hbm3"}, flavorsOf(s.QueueName("product")))
	assert.Equal(t, map[string]any{"mandate.dev/leaf-block": "b1", "nvidia.com/gpu.product": "NVIDIA-B200"},
		field(t, find(t, objs, ResourceFlavorKind, "", "mandate-pool-b1-nvidia-b200"), "spec", "nodeLabels"))
	assert.Equal(t, map[string]any{"mandate.dev/leaf-block": "b1"}, field(t, find(t, objs, ResourceFlavorKind, "", "mandate-pool-b1"), "spec", "nodeLabels"))
	assert.Equal(t, []string{"mandate-pool-both-b1", "mandate-pool-both-b2"}, flavorsOf(s.QueueName("platform")))
}
