// Package facts is the ground floor of the scheduler registry: one table
// of what Mandate knows about each scheduler it can send work to — its
// name in the authority model, the pods' schedulerName, the keys it reads
// for queue, priority, preemptibility, gang and topology, the keys a user
// may set as a request, whether it keeps its own quota, and the kinds of
// its objects (queues, topologies, PodGroups or Workloads, and what
// `mandate sync` writes). It imports no Mandate package, so the
// normaliser, the ledger, the cluster state, the configuration and the
// model checker read the same facts the adapters in package scheduler
// write from. Each scheduler is one Register call in table.go; the
// behaviour built on the facts (rendering, sync) registers under the same
// name in packages scheduler and schedsync.
package facts

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Place is where a scheduler reads a key.
type Place int

const (
	// Label: a label of the submitted object (the top owner, or the pod).
	Label Place = iota + 1
	// Annotation: an annotation of the submitted object.
	Annotation
	// PodAnnotation: an annotation of each pod template, which the pods
	// carry and the scheduler reads from the pod.
	PodAnnotation
	// PodSetAnnotation: an annotation of each pod template that the
	// scheduler reads from the workload's pod set, never from a pod.
	PodSetAnnotation
)

// Key is one label or annotation a scheduler reads.
type Key struct {
	Name  string
	Place Place
}

// IsLabel reports whether the key is a label.
func (k Key) IsLabel() bool { return k.Place == Label }

// Describe names the key as a person finds it: "label kai.scheduler/queue",
// "annotation scheduling.volcano.sh/queue-name".
func (k Key) Describe() string {
	if k.IsLabel() {
		return "label " + k.Name
	}
	return "annotation " + k.Name
}

// Preemptibility is a scheduler's key by which a workload says whether it
// may be preempted, and the key's two values.
type Preemptibility struct {
	Key
	Preemptible, NonPreemptible string
}

// Value is the key's value for a preemptibility.
func (p Preemptibility) Value(preemptible bool) string {
	if preemptible {
		return p.Preemptible
	}
	return p.NonPreemptible
}

// What a scheduler's key asks for, in the authority model's terms.
const (
	AsksQueue         = "queue"
	AsksPriorityClass = "priorityClass"
	AsksGangMin       = "gangMin"
)

// Request is a scheduler key a user may set on a workload: the normaliser
// reads it as the user's request for what Asks names, and the authority
// model keeps what it allows and says what it overrides.
type Request struct {
	Key
	// Asks is AsksQueue, AsksPriorityClass or AsksGangMin.
	Asks string
}

// Kind is one kind of a scheduler's objects.
type Kind struct {
	GVK schema.GroupVersionKind
	// Resource is the API resource (plural), for RBAC.
	Resource   string
	Namespaced bool
}

// QueueKind is the kind of object a scheduler's queue key names.
type QueueKind struct {
	Kind
	// HasState: the queue admits work only while its status.state is
	// "Open" (a Volcano Queue).
	HasState bool
	// CapacityPath is the field of the queue's capacity, which explain
	// shows prefixed by CapacityPrefix; allocation is status.allocated.
	CapacityPath   []string
	CapacityPrefix string
}

// SyncKind is one kind of object `mandate sync` writes for a scheduler.
type SyncKind struct {
	Kind
	// Queue kinds are closed instead of deleted while they hold workloads.
	Queue bool
	// StatusFields are set through the status subresource.
	StatusFields bool
}

// Scheduler is everything Mandate knows about one scheduler.
type Scheduler struct {
	// Name is the scheduler as the authority model names it
	// (Directives.Scheduler, a tenant's scheduler).
	Name string
	// Title names it in messages ("Volcano").
	Title string
	// SchedulerName is the pods' spec.schedulerName; "" when the pods keep
	// the one they have (Kueue admits, the default scheduler places).
	SchedulerName string

	// The keys it reads from the decision; a zero Key when it has none.
	Queue          Key
	PriorityClass  Key
	Preemptibility Preemptibility
	// GroupName names the PodGroup a pod belongs to.
	GroupName Key
	// GangMin makes a workload a gang of at least that many pods.
	GangMin Key
	// Topology names the topology object; RequiredTopology and
	// PreferredTopology carry a level's node label.
	Topology, RequiredTopology, PreferredTopology Key

	// Requests are the keys a user may set that Mandate reads as a request
	// (the others it overwrites from the decision).
	Requests []Request
	// PodKeyPrefixes are the prefixes of the pod labels and annotations of
	// this scheduler the cluster informers keep.
	PodKeyPrefixes []string

	// OwnsQuota: the scheduler admits a workload into its own quota by
	// unsuspending it. Mandate then holds (suspends) the workload on
	// CREATE, and reserves nothing for it when it is preemptible (a
	// non-preemptible one holds its guarantee, queued or not).
	OwnsQuota bool

	// DefaultQueue is the queue the scheduler's CRDs write into an object
	// that names none before any admission webhook sees it (Volcano's Job
	// and PodGroup spec.queue); "" when none. A defaulted and an explicit
	// one cannot be told apart, so neither is read as a request.
	DefaultQueue string

	// NeverEvictsGangs: the scheduler never evicts a pod that would leave a
	// gang below its minimum (Volcano's gang plugin vetoes such a victim,
	// in the first tier of the configuration mandate sync renders), so a
	// gang at its minimum is never a victim there. The others evict a gang
	// whole: Kueue a Workload, KAI a PodGroup, the default scheduler with
	// Mandate's gang eviction. mandate simulate chooses victims by it.
	NeverEvictsGangs bool

	// QueueKind is what the queue key names; nil when none. Admission warns
	// of a queue that does not exist (or is not open), explain shows it.
	QueueKind *QueueKind
	// TopologyKind is what the topology key names; nil when none.
	// Admission warns of one that does not exist or lacks a level.
	TopologyKind *Kind
	// GroupKinds are the objects the scheduler keeps for a workload while it
	// waits (PodGroups, Kueue Workloads): explain shows their conditions,
	// sync counts them to know a queue still holds work.
	GroupKinds []Kind
	// SyncKinds are what `mandate sync` writes, in creation order
	// (referenced kinds first); none for a scheduler sync does not
	// configure.
	SyncKinds []SyncKind
}

// Keys lists every key the scheduler reads from the decision, in a fixed
// order.
func (s Scheduler) Keys() []Key {
	var out []Key
	for _, k := range []Key{s.Queue, s.PriorityClass, s.Preemptibility.Key, s.Topology, s.RequiredTopology,
		s.PreferredTopology, s.GangMin, s.GroupName} {
		if k.Name != "" {
			out = append(out, k)
		}
	}
	return out
}

// Syncs reports whether `mandate sync` configures the scheduler.
func (s Scheduler) Syncs() bool { return len(s.SyncKinds) > 0 }

// PriorityClass is Kubernetes' PriorityClass, which every scheduler reads
// and `mandate sync` writes one of per tier.
var PriorityClass = Kind{GVK: schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"},
	Resource: "priorityclasses"}

var registry = struct {
	sync.RWMutex
	list []Scheduler
	// preemptibility is every scheduler's preemptibility key, kept with
	// the list: the ledger reads it for every pod it counts.
	preemptibility []Preemptibility
}{}

// Register adds s to the registry; a later registration of the same name
// replaces the earlier one in place. It panics on a registration without a
// name or title: a programming error.
func Register(s Scheduler) {
	if s.Name == "" || s.Title == "" {
		panic(fmt.Sprintf("facts: incomplete registration %q: Name and Title are required", s.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	list := slices.Clone(registry.list)
	if i := slices.IndexFunc(list, func(o Scheduler) bool { return o.Name == s.Name }); i >= 0 {
		list[i] = s
	} else {
		list = append(list, s)
	}
	registry.list = list
	registry.preemptibility = preemptibilityOf(list)
}

// Unregister removes a registration (for tests that register a scheduler
// of their own).
func Unregister(name string) {
	registry.Lock()
	defer registry.Unlock()
	registry.list = slices.DeleteFunc(slices.Clone(registry.list), func(o Scheduler) bool { return o.Name == name })
	registry.preemptibility = preemptibilityOf(registry.list)
}

// All lists the registered schedulers in registration order. The slice is
// shared: do not modify it.
func All() []Scheduler {
	registry.RLock()
	defer registry.RUnlock()
	return registry.list
}

// Lookup returns the scheduler the model names name.
func Lookup(name string) (Scheduler, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return Scheduler{}, false
}

// Names lists the registered schedulers' names, in registration order.
func Names() []string {
	var out []string
	for _, s := range All() {
		out = append(out, s.Name)
	}
	return out
}

// SyncNames lists the schedulers `mandate sync` configures.
func SyncNames() []string {
	var out []string
	for _, s := range All() {
		if s.Syncs() {
			out = append(out, s.Name)
		}
	}
	return out
}

// List names items for a message: "volcano, kai and default".
func List(items []string) string {
	switch n := len(items); n {
	case 0:
		return ""
	case 1:
		return items[0]
	default:
		return fmt.Sprintf("%s and %s", strings.Join(items[:n-1], ", "), items[n-1])
	}
}

// PreemptibilityKeys lists every scheduler's preemptibility key, in
// registration order. The slice is shared: do not modify it.
func PreemptibilityKeys() []Preemptibility {
	registry.RLock()
	defer registry.RUnlock()
	return registry.preemptibility
}

func preemptibilityOf(list []Scheduler) []Preemptibility {
	var out []Preemptibility
	for _, s := range list {
		if s.Preemptibility.Name != "" {
			out = append(out, s.Preemptibility)
		}
	}
	return out
}

// QueueKindOf returns the queue kind of a group and kind, and its scheduler.
func QueueKindOf(gk schema.GroupKind) (QueueKind, Scheduler, bool) {
	for _, s := range All() {
		if s.QueueKind != nil && s.QueueKind.GVK.GroupKind() == gk {
			return *s.QueueKind, s, true
		}
	}
	return QueueKind{}, Scheduler{}, false
}
