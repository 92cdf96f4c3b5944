package cluster

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// The scheduler objects admission names, whose presence SchedulerObjects
// tracks: every registered scheduler's queue and topology kinds (package
// facts), and PriorityClasses.
var (
	VolcanoQueueGVK  = facts.Volcano.QueueKind.GVK
	KAIQueueGVK      = facts.KAI.QueueKind.GVK
	KAITopologyGVK   = facts.KAI.TopologyKind.GVK
	PriorityClassGVK = facts.PriorityClass.GVK
)

// watchedKinds are the kinds SchedulerObjects watches, and what it reads of
// each: a queue's state, a topology's levels.
func watchedKinds() []watchedKindOf {
	out := []watchedKindOf{{Kind: facts.PriorityClass}}
	for _, s := range facts.All() {
		if q := s.QueueKind; q != nil {
			out = append(out, watchedKindOf{Kind: q.Kind, state: q.HasState})
		}
		if t := s.TopologyKind; t != nil {
			out = append(out, watchedKindOf{Kind: *t, levels: true})
		}
	}
	return out
}

type watchedKindOf struct {
	facts.Kind
	// state: the object is Present only while its status.state is Open.
	state bool
	// levels: read spec.levels[].nodeLabel.
	levels bool
}

// Presence is what the cluster says of a named scheduler object.
type Presence int

const (
	// Unknown: the kind is not served, not watched, or its informer has
	// not synced yet; nothing can be said.
	Unknown Presence = iota
	// Missing: the kind is watched and no object of that name exists.
	Missing
	// Present: it exists (and, for a Volcano Queue, is Open).
	Present
	// NotOpen: a Volcano Queue that exists but whose status.state is not
	// Open (Closed, Closing, or not set yet).
	NotOpen
)

// SchedulerObject is what SchedulerObjects knows of one object.
type SchedulerObject struct {
	Presence Presence
	// State is a Volcano Queue's status.state.
	State string
	// NodeLabels are a KAI Topology's spec.levels[].nodeLabel.
	NodeLabels []string
}

// SchedulerObjects keeps, from informers of the manager's cache, the names
// of the cluster's PriorityClasses and of the schedulers' queues and
// topologies (watchedKinds; Kueue's LocalQueues by namespace), so admission
// can warn of a priority class, queue or topology it names that no object
// carries without a read per admission. Kinds whose CRD is
// not served when WatchSchedulerObjects runs stay Unknown.
type SchedulerObjects struct {
	mu    sync.RWMutex
	kinds map[schema.GroupVersionKind]*watchedKind
}

type watchedKind struct {
	synced func() bool
	byName map[string]SchedulerObject
}

// WatchSchedulerObjects starts (through informers, which start with the
// cache or at once when it runs) watching every kind of watchedKinds that
// mapper says is served.
func WatchSchedulerObjects(ctx context.Context, informers cache.Informers, mapper meta.RESTMapper) (*SchedulerObjects, error) {
	s := &SchedulerObjects{kinds: map[schema.GroupVersionKind]*watchedKind{}}
	for _, wk := range watchedKinds() {
		gvk := wk.GVK
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				log.FromContext(ctx).Info("scheduler kind not served: admission cannot check the names it injects", "kind", gvk.String())
				continue
			}
			return nil, fmt.Errorf("unable to map %s: %w", gvk, err)
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		inf, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("unable to get the %s informer: %w", gvk.Kind, err)
		}
		k := &watchedKind{synced: func() bool { return false }, byName: map[string]SchedulerObject{}}
		s.mu.Lock()
		s.kinds[gvk] = k
		s.mu.Unlock()
		reg, err := inf.AddEventHandler(eventHandler(func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				s.set(gvk, objectKey(u.GetNamespace(), u.GetName()), objectOf(wk, u))
			}
		}, func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				s.delete(gvk, objectKey(u.GetNamespace(), u.GetName()))
			}
		}))
		if err != nil {
			return nil, fmt.Errorf("unable to watch %s: %w", gvk.Kind, err)
		}
		// Synced once this handler has seen every object of the first
		// list: before that, a missing name proves nothing.
		s.mu.Lock()
		k.synced = reg.HasSynced
		s.mu.Unlock()
	}
	return s, nil
}

// objectKey is the key of an object in its kind's map: its name, after its
// namespace for a namespaced kind.
func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// objectOf reads what matters of one object of kind wk.
func objectOf(wk watchedKindOf, u *unstructured.Unstructured) SchedulerObject {
	o := SchedulerObject{Presence: Present}
	if wk.state {
		o.State, _, _ = unstructured.NestedString(u.Object, "status", "state")
		if o.State != "Open" {
			o.Presence = NotOpen
		}
	}
	if wk.levels {
		levels, _, _ := unstructured.NestedSlice(u.Object, "spec", "levels")
		for _, l := range levels {
			if m, ok := l.(map[string]any); ok {
				if label, ok := m["nodeLabel"].(string); ok {
					o.NodeLabels = append(o.NodeLabels, label)
				}
			}
		}
	}
	return o
}

func (s *SchedulerObjects) set(gvk schema.GroupVersionKind, name string, o SchedulerObject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds[gvk].byName[name] = o
}

func (s *SchedulerObjects) delete(gvk schema.GroupVersionKind, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.kinds[gvk].byName, name)
}

// Lookup says what the cluster holds under name (in namespace, "" for a
// cluster-scoped kind) of kind gvk: Unknown when the kind is not watched or
// not synced yet.
func (s *SchedulerObjects) Lookup(gvk schema.GroupVersionKind, namespace, name string) SchedulerObject {
	if s == nil {
		return SchedulerObject{}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.kinds[gvk]
	if !ok || !k.synced() {
		return SchedulerObject{}
	}
	if o, ok := k.byName[objectKey(namespace, name)]; ok {
		return o
	}
	return SchedulerObject{Presence: Missing}
}
