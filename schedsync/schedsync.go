// Package schedsync makes the schedulers' configuration follow the
// authority model: from the active model it renders the objects the
// admission directives name — PriorityClasses for the tiers, Volcano and
// KAI queue hierarchies, Kueue Cohorts, ClusterQueues, LocalQueues,
// ResourceFlavors and WorkloadPriorityClasses, the topology objects
// (Volcano HyperNodes, KAI and Kueue Topologies) and Volcano's scheduler
// configuration (volcanoconf.go) — and reconciles the
// cluster to them with server-side apply under its own field manager. It
// changes or prunes only objects labelled as Mandate's; a queue that still
// holds workloads is closed, never deleted. A Plan is both the drift report
// (sync --check) and the list of changes Apply makes.
package schedsync

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/scheduler/facts"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "mandate-sync"

// The labels every object Sync writes carries (config.LabelManagedBy
// config.ManagedBy, and config.LabelComponent Component); only objects
// carrying both are ever changed or pruned.
const (
	Component = "scheduler-config"
	// LabelClosed marks a queue kept only because it still holds workloads
	// of a tenant the model no longer has.
	LabelClosed = "mandate.dev/closed"
)

// The schedulers Sync can configure, as the registry names them.
var (
	Volcano = facts.Volcano.Name
	KAI     = facts.KAI.Name
	Kueue   = facts.Kueue.Name
)

// AllSchedulers lists every scheduler Sync can configure: those of the
// registry (package facts) with a renderer (Register), in the registry's
// order.
func AllSchedulers() []string {
	var out []string
	for _, s := range facts.SyncNames() {
		if _, ok := syncOf(s); ok {
			out = append(out, s)
		}
	}
	return out
}

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

// The kinds Sync manages: PriorityClasses, then each scheduler's
// facts.Scheduler.SyncKinds in the registry's order, which is the order
// they are created in (referenced kinds first); deletion runs in the
// reverse order.
var (
	PriorityClassKind    = Kind{GVK: facts.PriorityClass.GVK}
	VolcanoQueueKind     = kindNamed(facts.Volcano, "Queue")
	HyperNodeKind        = kindNamed(facts.Volcano, "HyperNode")
	KAIQueueKind         = kindNamed(facts.KAI, "Queue")
	KAITopologyKind      = kindNamed(facts.KAI, "Topology")
	KueueTopologyKind    = kindNamed(facts.Kueue, "Topology")
	ResourceFlavorKind   = kindNamed(facts.Kueue, "ResourceFlavor")
	WorkloadPriorityKind = kindNamed(facts.Kueue, "WorkloadPriorityClass")
	CohortKind           = kindNamed(facts.Kueue, "Cohort")
	ClusterQueueKind     = kindNamed(facts.Kueue, "ClusterQueue")
	LocalQueueKind       = kindNamed(facts.Kueue, "LocalQueue")
)

// kinds lists every kind Sync manages, in creation order.
func kinds() []Kind {
	out := []Kind{PriorityClassKind}
	for _, s := range facts.All() {
		for _, k := range s.SyncKinds {
			out = append(out, Kind{GVK: k.GVK, Scheduler: s.Name, Namespaced: k.Namespaced, Queue: k.Queue, StatusFields: k.StatusFields})
		}
	}
	return out
}

// kindNamed is the sync kind of s whose Kind is name; it panics when the
// registry has none: a programming error.
func kindNamed(s facts.Scheduler, name string) Kind {
	for _, k := range s.SyncKinds {
		if k.GVK.Kind == name {
			return Kind{GVK: k.GVK, Scheduler: s.Name, Namespaced: k.Namespaced, Queue: k.Queue, StatusFields: k.StatusFields}
		}
	}
	panic(fmt.Sprintf("schedsync: the registry gives %s no sync kind %s", s.Name, name))
}

// Kinds lists the kinds Sync manages for the given schedulers (and
// PriorityClasses), in creation order.
func Kinds(schedulers []string) []Kind {
	want := map[string]bool{"": true}
	for _, s := range schedulers {
		want[s] = true
	}
	var out []Kind
	for _, k := range kinds() {
		if want[k.Scheduler] {
			out = append(out, k)
		}
	}
	return out
}

func kindOf(gvk schema.GroupVersionKind) (Kind, int) {
	all := kinds()
	for i, k := range all {
		if k.GVK == gvk {
			return k, i
		}
	}
	return Kind{GVK: gvk}, len(all)
}

// Object is one desired object: what is applied to the resource, and for
// kinds with StatusFields what is applied to its status subresource.
type Object struct {
	*unstructured.Unstructured
	// Status is applied through the status subresource (a Volcano Queue's
	// state); nil for none.
	Status map[string]any
	// Vet, when set, says how a live object of this name breaks the
	// promise (none: it keeps it), whatever its text: a foreign one that
	// keeps it is no drift, and the reasons are reported with the change
	// (a scheduler's configuration file, such as Volcano's).
	Vet func(live *unstructured.Unstructured) []string
}

// newObject starts an object of kind k labelled as Mandate's.
func newObject(k Kind, namespace, name string, labels map[string]string) Object {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(k.GVK)
	u.SetName(name)
	if k.Namespaced {
		u.SetNamespace(namespace)
	}
	l := map[string]string{config.LabelManagedBy: config.ManagedBy, config.LabelComponent: Component}
	for key, v := range labels {
		l[key] = v
	}
	u.SetLabels(l)
	return Object{Unstructured: u}
}

// isMandates reports whether an object carries Mandate's labels.
func isMandates(u *unstructured.Unstructured) bool {
	l := u.GetLabels()
	return l[config.LabelManagedBy] == config.ManagedBy && l[config.LabelComponent] == Component
}
