package scheduler

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// PodGroupAPIVersion and PodGroupKind identify Volcano's PodGroup, the
// object the registry says Volcano keeps a gang in (package facts).
var (
	PodGroupAPIVersion = facts.Volcano.GroupKinds[0].GVK.GroupVersion().String()
	PodGroupKind       = facts.Volcano.GroupKinds[0].GVK.Kind
)

// PodGroup builds the Volcano PodGroup for a gang the volcano adapter
// annotated (not for a Volcano Job, whose controller makes its own):
//   - name PodGroupName(w), in w's namespace, owned by owner when it names
//     one, so the group goes when the workload does;
//   - minMember d.GangMin, or every pod (w.Pods) when the directive sets none;
//   - queue and priorityClassName from d, when set;
//   - minResources as given; when nil, the GPUs the gang minimum needs at
//     least (its minMember smallest pods), so Volcano's enqueue check never
//     holds back a gang that could start (none for KAI-style shared GPUs,
//     which request no extended resource);
//   - networkTopology as for a Volcano Job (see Apply).
//
// Invalid topology directives (a level without a tier) leave networkTopology
// out; Apply reports them.
func PodGroup(w workload.Workload, d evaluator.Directives, owner metav1.OwnerReference, minResources corev1.ResourceList) *unstructured.Unstructured {
	minMember := d.GangMin
	if minMember <= 0 {
		minMember = w.Pods
	}
	meta := map[string]any{
		"name":   PodGroupName(w),
		"labels": map[string]any{config.LabelManagedBy: config.ManagedBy},
	}
	if w.Namespace != "" {
		meta["namespace"] = w.Namespace
	}
	if owner.Name != "" {
		ref := map[string]any{
			"apiVersion": owner.APIVersion,
			"kind":       owner.Kind,
			"name":       owner.Name,
			"uid":        string(owner.UID),
		}
		if owner.Controller != nil {
			ref["controller"] = *owner.Controller
		}
		if owner.BlockOwnerDeletion != nil {
			ref["blockOwnerDeletion"] = *owner.BlockOwnerDeletion
		}
		meta["ownerReferences"] = []any{ref}
	}
	spec := map[string]any{"minMember": int64(minMember)}
	if d.Queue != "" {
		spec["queue"] = d.Queue
	}
	if d.PriorityClass != "" {
		spec["priorityClassName"] = d.PriorityClass
	}
	shared := w.GPUFraction > 0 || w.GPUMemoryMiB > 0 // KAI sharing: no extended resource to count
	if minResources == nil && w.GPUResource != "" && !shared {
		minResources = corev1.ResourceList{
			corev1.ResourceName(w.GPUResource): *resource.NewQuantity(int64(minGangGPUs(w, minMember)), resource.DecimalSI),
		}
	}
	if len(minResources) > 0 {
		rl := make(map[string]any, len(minResources))
		for name, q := range minResources {
			rl[string(name)] = q.String()
		}
		spec["minResources"] = rl
	}
	if topology, err := networkTopology(d); err == nil && topology != nil {
		spec["networkTopology"] = topology
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PodGroupAPIVersion,
		"kind":       PodGroupKind,
		"metadata":   meta,
		"spec":       spec,
	}}
}

// minGangGPUs is the fewest GPUs any minMember pods of w can take: the pods
// of the roles with the smallest requests first.
func minGangGPUs(w workload.Workload, minMember int) int {
	roles := append([]workload.Role(nil), w.Roles...)
	sort.SliceStable(roles, func(i, j int) bool { return roles[i].GPUsPerPod < roles[j].GPUsPerPod })
	total, left := 0, minMember
	for _, r := range roles {
		n := min(left, r.Replicas)
		total += n * r.GPUsPerPod
		if left -= n; left == 0 {
			break
		}
	}
	return total
}
