package replay

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/simulate/openb"
	"github.com/mandate-dev/mandate/topology"
)

// The openb trace has no tenants and no priority classes. Its pods are
// mapped onto the model reproducibly:
//
//   - tenant: the model's leaf tenants (tenants without children) sorted
//     by name, and the pod's the one at index ⌊FNV-1a-32(name) × count /
//     2³²⌋ (the hash's high bits: sequential names spread): equal shares
//     on average, the same pod always to the same tenant;
//   - priority class, from qos, among the classes the tenant may use
//     (model.AllowedClasses; every tier when its chain lists none):
//     LS and Guaranteed take the highest-valued class, Burstable the
//     lowest-valued non-preemptible one (the highest if all are
//     preemptible), BE the lowest-valued one;
//   - submit is creation_time, duration deletion_time - creation_time (a
//     pod never deleted runs to the last time of the trace); a pod without
//     a creation_time is left out;
//   - one pod, num_gpu GPUs (gpu_milli of one when it shares it), the
//     gpu_spec types as its products, cpu_milli and memory_mib.

// LeafTenants are the model's tenants without children, sorted.
func LeafTenants(m model.Model) []string {
	var out []string
	for _, t := range m.TenantNames() {
		if len(m.Children(t)) == 0 {
			out = append(out, t)
		}
	}
	return out
}

// OpenbTenant is the tenant pod name maps to among leaves.
func OpenbTenant(name string, leaves []string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return leaves[uint64(h.Sum32())*uint64(len(leaves))>>32]
}

// OpenbClass is the priority class qos maps to for tenant.
func OpenbClass(m model.Model, tenant, qos string) string {
	classes, _, ok := m.AllowedClasses(tenant)
	if !ok {
		classes = m.TierNames()
	}
	classes = slices.Clone(classes)
	sort.SliceStable(classes, func(i, j int) bool {
		a, b := m.Priorities[classes[i]].Value, m.Priorities[classes[j]].Value
		if a != b {
			return a < b
		}
		return classes[i] < classes[j]
	})
	if len(classes) == 0 {
		return ""
	}
	switch qos {
	case "LS", "Guaranteed":
		return classes[len(classes)-1]
	case "Burstable":
		for _, c := range classes {
			if !m.Priorities[c].Preemptible {
				return c
			}
		}
		return classes[len(classes)-1]
	default: // BE and anything else
		return classes[0]
	}
}

// FromOpenb maps an openb pod list onto the model's tenants (see above).
func FromOpenb(pods []openb.Pod, m model.Model) ([]Job, error) {
	leaves := LeafTenants(m)
	if len(leaves) == 0 {
		return nil, fmt.Errorf("the model has no tenants to give the openb pods to")
	}
	var end int64
	for _, p := range pods {
		end = max(end, p.CreationTime, p.DeletionTime)
	}
	jobs := make([]Job, 0, len(pods))
	for _, p := range pods {
		if p.CreationTime == openb.Unset {
			continue
		}
		stop := p.DeletionTime
		if stop == openb.Unset || stop < p.CreationTime {
			stop = end
		}
		tenant := OpenbTenant(p.Name, leaves)
		j := Job{Name: p.Name, Submit: float64(p.CreationTime), Duration: float64(stop - p.CreationTime),
			Tenant: tenant, Pods: 1, GPUsPerPod: p.NumGPU, Resource: topology.DefaultGPUResource, Products: p.GPUSpec,
			CPUMilli: p.CPUMilli, MemoryMiB: p.MemoryMiB, PriorityClass: OpenbClass(m, tenant, p.QoS)}
		if p.NumGPU == 1 && p.GPUMilli > 0 && p.GPUMilli < topology.MilliPerGPU {
			j.GPUMilli = p.GPUMilli
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}
