// Package schedsync makes the schedulers' configuration follow the
// authority model: from the active model it renders the objects the
// admission directives name — PriorityClasses for the tiers, Volcano and
// KAI queue hierarchies, Kueue Cohorts, ClusterQueues, LocalQueues,
// ResourceFlavors and WorkloadPriorityClasses, and the topology objects
// (Volcano HyperNodes, KAI and Kueue Topologies) — and reconciles the
// cluster to them with server-side apply under its own field manager. It
// changes or prunes only objects labelled as Mandate's; a queue that still
// holds workloads is closed, never deleted. A Plan is both the drift report
// (sync --check) and the list of changes Apply makes.
package schedsync

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "mandate-sync"

// The labels every object Sync writes carries; only objects carrying both
// are ever changed or pruned.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "mandate"
	LabelComponent = "app.kubernetes.io/component"
	Component      = "scheduler-config"
	// LabelTenant names the tenant a queue belongs to.
	LabelTenant = "mandate.dev/tenant"
	// LabelClosed marks a queue kept only because it still holds workloads
	// of a tenant the model no longer has.
	LabelClosed = "mandate.dev/closed"
)

// The schedulers Sync can configure.
const (
	Volcano = "volcano"
	KAI     = "kai"
	Kueue   = "kueue"
)

// AllSchedulers lists every scheduler Sync can configure.
var AllSchedulers = []string{Volcano, KAI, Kueue}

// Kind is one kind of object Sync manages.
type Kind struct {
	GVK schema.GroupVersionKind
	// Scheduler is the scheduler the kind configures; "" for
	// PriorityClasses, which every scheduler reads.
	Scheduler  string
	Namespaced bool
	// Queue kinds are closed instead of deleted while they hold workloads.
	Queue bool
	// StatusFields are set through the status subresource.
	StatusFields bool
}

// The kinds Sync manages, in the order they are created (referenced kinds
// first); deletion runs in the reverse order.
var (
	PriorityClassKind    = Kind{GVK: gvk("scheduling.k8s.io", "v1", "PriorityClass")}
	VolcanoQueueKind     = Kind{GVK: gvk("scheduling.volcano.sh", "v1beta1", "Queue"), Scheduler: Volcano, Queue: true, StatusFields: true}
	HyperNodeKind        = Kind{GVK: gvk("topology.volcano.sh", "v1alpha1", "HyperNode"), Scheduler: Volcano}
	KAIQueueKind         = Kind{GVK: gvk("scheduling.run.ai", "v2", "Queue"), Scheduler: KAI, Queue: true}
	KAITopologyKind      = Kind{GVK: gvk("kai.scheduler", "v1alpha1", "Topology"), Scheduler: KAI}
	KueueTopologyKind    = Kind{GVK: gvk("kueue.x-k8s.io", "v1beta2", "Topology"), Scheduler: Kueue}
	ResourceFlavorKind   = Kind{GVK: gvk("kueue.x-k8s.io", "v1beta2", "ResourceFlavor"), Scheduler: Kueue}
	WorkloadPriorityKind = Kind{GVK: gvk("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass"), Scheduler: Kueue}
	CohortKind           = Kind{GVK: gvk("kueue.x-k8s.io", "v1beta2", "Cohort"), Scheduler: Kueue}
	ClusterQueueKind     = Kind{GVK: gvk("kueue.x-k8s.io", "v1beta2", "ClusterQueue"), Scheduler: Kueue, Queue: true}
	LocalQueueKind       = Kind{GVK: gvk("kueue.x-k8s.io", "v1beta2", "LocalQueue"), Scheduler: Kueue, Namespaced: true, Queue: true}
	kinds                = []Kind{PriorityClassKind, VolcanoQueueKind, HyperNodeKind, KAIQueueKind, KAITopologyKind,
		KueueTopologyKind, ResourceFlavorKind, WorkloadPriorityKind, CohortKind, ClusterQueueKind, LocalQueueKind}
)

// Kinds lists the kinds Sync manages for the given schedulers (and
// PriorityClasses), in creation order.
func Kinds(schedulers []string) []Kind {
	want := map[string]bool{"": true}
	for _, s := range schedulers {
		want[s] = true
	}
	var out []Kind
	for _, k := range kinds {
		if want[k.Scheduler] {
			out = append(out, k)
		}
	}
	return out
}

func kindOf(gvk schema.GroupVersionKind) (Kind, int) {
	for i, k := range kinds {
		if k.GVK == gvk {
			return k, i
		}
	}
	return Kind{GVK: gvk}, len(kinds)
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// Object is one desired object: what is applied to the resource, and for
// kinds with StatusFields what is applied to its status subresource.
type Object struct {
	*unstructured.Unstructured
	// Status is applied through the status subresource (a Volcano Queue's
	// state); nil for none.
	Status map[string]any
}

// newObject starts an object of kind k labelled as Mandate's.
func newObject(k Kind, namespace, name string, labels map[string]string) Object {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(k.GVK)
	u.SetName(name)
	if k.Namespaced {
		u.SetNamespace(namespace)
	}
	l := map[string]string{LabelManagedBy: ManagedBy, LabelComponent: Component}
	for key, v := range labels {
		l[key] = v
	}
	u.SetLabels(l)
	return Object{Unstructured: u}
}

// isMandates reports whether an object carries Mandate's labels.
func isMandates(u *unstructured.Unstructured) bool {
	l := u.GetLabels()
	return l[LabelManagedBy] == ManagedBy && l[LabelComponent] == Component
}
