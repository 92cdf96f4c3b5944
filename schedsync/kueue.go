package schedsync

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// anyProductFlavor is the ResourceFlavor of quota that names no GPU
// product: it selects every GPU node by the label NVIDIA's GPU feature
// discovery sets on them (a Kueue flavor with a topology needs a node label).
const (
	anyProductFlavor = "mandate-any-gpu"
	gpuPresentLabel  = "nvidia.com/gpu.present"
)

func init() {
	Register(Kueue, Sync{
		Render: func(s model.Model, c Cluster, o Options) ([]Object, error) { return kueueObjects(s, c, o) },
		Holds:  kueueHolds,
		// Kueue's queues stop admitting under stopPolicy Hold.
		Close: func(_ *unstructured.Unstructured, spec map[string]any) (map[string]any, error) {
			spec["stopPolicy"] = "Hold"
			return nil, nil
		},
	})
}

// kueueHolds counts the Workloads in a LocalQueue, or admitted to (or
// queued through a LocalQueue feeding) a ClusterQueue.
func kueueHolds(ctx context.Context, list Lister, q *unstructured.Unstructured) (int, error) {
	workloads := facts.Kueue.GroupKinds[0].GVK
	name := q.GetName()
	switch q.GroupVersionKind() {
	case LocalQueueKind.GVK:
		ns := q.GetNamespace()
		return countOf(ctx, list, workloads, func(u *unstructured.Unstructured) bool {
			return u.GetNamespace() == ns && str(u, "spec", "queueName") == name
		})
	case ClusterQueueKind.GVK:
		lqs, err := list(ctx, LocalQueueKind.GVK)
		if err != nil {
			return 0, err
		}
		feeds := map[string]bool{}
		for i := range lqs {
			if str(&lqs[i], "spec", "clusterQueue") == name {
				feeds[lqs[i].GetNamespace()+"/"+lqs[i].GetName()] = true
			}
		}
		return countOf(ctx, list, workloads, func(u *unstructured.Unstructured) bool {
			return str(u, "status", "admission", "clusterQueue") == name ||
				feeds[u.GetNamespace()+"/"+str(u, "spec", "queueName")]
		})
	}
	return 0, nil
}

// ungovernedQuota is the nominal quota of the resources Mandate does not
// govern — cpu, memory and ephemeral storage, which every pod asks for —
// in each flavor of a ClusterQueue: Kueue admits a workload only when its
// ClusterQueue covers every resource its pods request, and the authority
// model's quota is GPUs only. The values are effectively unlimited per
// queue (a million cores, a pebibyte) yet small enough that Kueue's int64
// sums over any realistic number of queues in a cohort cannot overflow.
// Resources other than these and the model's GPUs (hugepages, RDMA
// devices) must be covered by hand or excluded in Kueue's configuration
// (resources.excludeResourcePrefixes); see docs/model.md.
var ungovernedQuota = map[string]int64{
	"cpu":               1_000_000,
	"memory":            1 << 50,
	"ephemeral-storage": 1 << 50,
}

// kueueObjects renders, for Kueue: a ResourceFlavor per GPU product the
// quota names, a Cohort per tenant with children, a ClusterQueue per leaf
// tenant, a LocalQueue in each of a leaf tenant's namespaces, a
// WorkloadPriorityClass per tier and the Topology.
func kueueObjects(s model.Model, c Cluster, o Options) ([]Object, error) {
	var out []Object
	topologyName := ""
	if s.Topology.Name != "" && len(s.Topology.Levels) > 0 {
		topologyName = s.Topology.Name
		t := newObject(KueueTopologyKind, "", topologyName, nil)
		var levels []any
		for _, l := range s.Topology.Levels {
			levels = append(levels, map[string]any{"nodeLabel": l.NodeLabel})
		}
		t.Object["spec"] = map[string]any{"levels": levels}
		out = append(out, t)
	}

	flavors := map[string]map[string]any{} // flavor name → its node labels
	quotas := map[string][]model.Pool{}
	flavorsOf := map[string]func(string) []string{} // tenant → product → its flavors
	for _, name := range s.TenantNames() {
		qs := s.Pools(name)
		quotas[name] = qs
		of := tenantFlavors(s, name, o.ProductLabel)
		flavorsOf[name] = func(product string) []string {
			var names []string
			for _, f := range of(product) {
				flavors[f.name] = f.nodeLabels
				names = append(names, f.name)
			}
			return names
		}
		for _, q := range qs {
			flavorsOf[name](q.Product)
		}
	}
	for _, f := range sortedKeys(flavors) {
		rf := newObject(ResourceFlavorKind, "", f, nil)
		spec := map[string]any{"nodeLabels": flavors[f]}
		if topologyName != "" {
			spec["topologyName"] = topologyName
		}
		rf.Object["spec"] = spec
		out = append(out, rf)
	}

	for _, c := range s.Classes() {
		w := newObject(WorkloadPriorityKind, "", c.Name, nil)
		w.Object["value"] = int64(c.Value)
		if c.Description != "" {
			w.Object["description"] = c.Description
		}
		out = append(out, w)
	}

	preemption := map[string]any{
		"withinClusterQueue":  "Never",
		"reclaimWithinCohort": "Never",
	}
	if s.AnyTierPreempts() {
		preemption["withinClusterQueue"] = "LowerPriority"
	}
	if s.OverGuaranteeReclaimable() {
		preemption["reclaimWithinCohort"] = "Any"
	}
	for _, name := range s.TenantNames() {
		t := s.Tenants[name]
		children := s.Children(name)
		labels := map[string]string{workload.LabelTenant: name}
		if len(children) > 0 {
			// An inner tenant is a Cohort: its children's guarantees plus
			// its own unassigned part; what it may borrow above its
			// guarantee from its parent is its borrowing limit.
			own := map[string]model.Pool{}
			for _, q := range quotas[name] {
				own[q.Resource+"\x00"+q.Product] = q
			}
			for _, child := range children {
				for _, q := range quotas[child] {
					k := q.Resource + "\x00" + q.Product
					if _, ok := own[k]; !ok {
						// A child's product the parent has no pool for
						// is carved from the parent's any pool.
						k = q.Resource + "\x00"
					}
					if p, ok := own[k]; ok {
						p.Guaranteed -= q.Guaranteed
						own[k] = p
					}
				}
			}
			var qs []model.Pool
			for _, q := range quotas[name] {
				p := own[q.Resource+"\x00"+q.Product]
				qs = append(qs, model.Pool{Resource: q.Resource, Product: q.Product,
					Guaranteed: max(p.Guaranteed, 0), Ceiling: max(p.Guaranteed, 0) + (q.Ceiling - q.Guaranteed)})
			}
			co := newObject(CohortKind, "", s.QueueName(name), labels)
			spec := map[string]any{}
			if t.Parent != "" {
				spec["parentName"] = s.QueueName(t.Parent)
			}
			if len(qs) > 0 {
				spec["resourceGroups"] = resourceGroups(qs, t.Parent != "", nil, flavorsOf[name])
			}
			co.Object["spec"] = spec
			out = append(out, co)
			continue
		}
		cq := newObject(ClusterQueueKind, "", s.QueueName(name), labels)
		spec := map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{workload.LabelTenant: name}},
			"preemption":        preemption,
			"stopPolicy":        "None",
		}
		if t.Parent != "" {
			spec["cohortName"] = s.QueueName(t.Parent)
		}
		if len(quotas[name]) > 0 {
			spec["resourceGroups"] = resourceGroups(quotas[name], t.Parent != "", ungovernedQuota, flavorsOf[name])
		}
		cq.Object["spec"] = spec
		out = append(out, cq)
	}
	for _, name := range s.TenantNames() {
		if len(s.Children(name)) > 0 {
			continue
		}
		namespaces := append([]string(nil), c.TenantNamespaces[name]...)
		sort.Strings(namespaces)
		for _, ns := range namespaces {
			lq := newObject(LocalQueueKind, ns, s.QueueName(name), map[string]string{workload.LabelTenant: name})
			lq.Object["spec"] = map[string]any{"clusterQueue": s.QueueName(name), "stopPolicy": "None"}
			out = append(out, lq)
		}
	}
	return out, nil
}

// resourceGroups renders quota as one Kueue resource group: every resource
// covered, one flavor per product, nominal = guarantee and, inside a cohort,
// borrowing limit = ceiling − guarantee. The ungoverned resources the quota
// does not name are covered too, in every flavor, with the nominal quota
// given and no borrowing limit. One group, not a second one for them: a
// pod set under Topology-Aware Scheduling must take all its resources from
// one flavor.
func resourceGroups(qs []model.Pool, borrowing bool, ungoverned map[string]int64, flavorsOf func(product string) []string) []any {
	resources := map[string]bool{}
	byFlavor := map[string]map[string]model.Pool{}
	for _, q := range qs {
		resources[q.Resource] = true
		for _, f := range flavorsOf(q.Product) {
			if byFlavor[f] == nil {
				byFlavor[f] = map[string]model.Pool{}
			}
			byFlavor[f][q.Resource] = q
		}
	}
	extra := map[string]int64{}
	for r, n := range ungoverned {
		if !resources[r] {
			extra[r] = n
			resources[r] = true
		}
	}
	covered := sortedKeys(resources)
	var flavors []any
	for _, f := range sortedKeys(byFlavor) {
		var rs []any
		for _, r := range covered {
			if n, ok := extra[r]; ok {
				rs = append(rs, map[string]any{"name": r, "nominalQuota": quantity(n)})
				continue
			}
			q := byFlavor[f][r]
			entry := map[string]any{"name": r, "nominalQuota": quantity(q.Guaranteed)}
			if borrowing {
				entry["borrowingLimit"] = quantity(q.Ceiling - q.Guaranteed)
			}
			rs = append(rs, entry)
		}
		flavors = append(flavors, map[string]any{"name": f, "resources": rs})
	}
	cov := make([]any, len(covered))
	for i, r := range covered {
		cov[i] = r
	}
	return []any{map[string]any{"coveredResources": cov, "flavors": flavors}}
}

// flavor is a ResourceFlavor: its name and node labels.
type flavor struct {
	name       string
	nodeLabels map[string]any
}

// tenantFlavors says which ResourceFlavors hold a tenant's quota of a GPU
// product ("" for any): the product's flavor, or, for a tenant its
// placement confines to a pool (tenants.<t>.placement.allowed), the pool's
// flavors of the product — one per node-label combination of the pool
// (Kueue's nodeLabels are exact values: a pool of several domains has a
// flavor per domain, each offering the tenant's whole quota, whose total
// Mandate's admission enforces as it does across products).
func tenantFlavors(s model.Model, tenant, productLabel string) func(product string) []flavor {
	pool, _, _, confined := s.AllowedPool(tenant, "")
	sel, ok := s.PoolSelector(pool)
	if !confined || !ok {
		return func(product string) []flavor {
			if product == "" {
				return []flavor{{anyProductFlavor, map[string]any{gpuPresentLabel: "true"}}}
			}
			return []flavor{{flavorName(product), map[string]any{productLabel: product}}}
		}
	}
	// The pool's label combinations, in a stable order.
	combos := []map[string]any{{}}
	names := []string{"mandate-pool-" + dnsLabel(pool)}
	for _, key := range sortedKeys(sel) {
		values := sel[key]
		var next []map[string]any
		var nextNames []string
		for i, c := range combos {
			for _, v := range values {
				m := map[string]any{key: v}
				for k, x := range c {
					m[k] = x
				}
				next = append(next, m)
				n := names[i]
				if len(values) > 1 {
					n += "-" + dnsLabel(v)
				}
				nextNames = append(nextNames, n)
			}
		}
		combos, names = next, nextNames
	}
	return func(product string) []flavor {
		out := make([]flavor, len(combos))
		for i, c := range combos {
			labels := map[string]any{}
			for k, v := range c {
				labels[k] = v
			}
			name := names[i]
			if product != "" {
				labels[productLabel] = product
				name += "-" + dnsLabel(product)
			}
			out[i] = flavor{name, labels}
		}
		return out
	}
}

// flavorName is the ResourceFlavor of a GPU product ("" for any).
func flavorName(product string) string {
	if product == "" {
		return anyProductFlavor
	}
	return "mandate-" + dnsLabel(product)
}

func quantity(n int64) any { return n }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
