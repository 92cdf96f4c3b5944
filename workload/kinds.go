package workload

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is one governed workload kind, declared once: everything the
// normaliser, the webhooks, their registration, the metrics, the gang
// controller and `mandate audit` need to know about it. Adding a kind is
// one Register call beside its Normaliser.
type Kind struct {
	// GVK is the kind as submitted.
	GVK schema.GroupVersionKind
	// Resource is the API resource (plural) the webhook rules route.
	Resource string
	// Label names the kind in metrics and tables, without its group
	// ("Pod", "Job", "PyTorchJob", "VolcanoJob").
	Label string
	// GangOwner is true when the pods the kind controls form one gang
	// decided with it: their owner's directives admit them, and an audit
	// decides them through it.
	GangOwner bool
	// VolcanoNative is true for Volcano's own gang kinds, whose PodGroup
	// Volcano's job controller keeps: Mandate's gang controller leaves
	// them alone.
	VolcanoNative bool
	// Normalise reads the kind's gang, GPUs and scheduling fields.
	Normalise Normaliser
	// Scalable is true for a kind whose scale subresource sets
	// spec.replicas (kubectl scale, a HorizontalPodAutoscaler): an UPDATE
	// of <resource>/scale is decided as the same UPDATE of the object.
	Scalable bool
	// Suspend is the path of the kind's suspend field (spec.suspend,
	// spec.runPolicy.suspend), nil for a kind that has none. A queueing
	// system such as Kueue admits a workload by unsuspending it.
	Suspend []string
	// Shape names the fields of the kind's own spec that hold its gang
	// (its roles, their sizes and pod templates) beyond those every kind
	// shares; the decision log keeps them in a redacted object
	// (decisionlog.Redact), so the gang can be read back from it.
	Shape Shape
	// Finished says how an object of the kind shows it has run to its
	// end; the zero value for a kind that runs until deleted (a
	// Deployment).
	Finished Finished
}

// Shape names the fields that hold a kind's gang, by key, at any depth of
// the object.
type Shape struct {
	// Fields are kept whole, through the same allow-list as the rest.
	Fields []string
	// RoleMaps are maps keyed by role name (a PyTorchJob's
	// pytorchReplicaSpecs): every key is kept, each value redacted.
	RoleMaps []string
}

// Finished says how an object of a kind shows it has run to its end:
// a True status condition of one of Conditions' types, or a phase field
// (PhasePath) holding one of Phases. A finished workload holds no GPUs and
// is never admitted again.
type Finished struct {
	Conditions []string
	PhasePath  []string
	Phases     []string
}

// IsFinished says whether obj, of a kind that finishes as f says, has run
// to its end.
func (f Finished) IsFinished(obj *unstructured.Unstructured) bool {
	if len(f.PhasePath) > 0 {
		phase, _, _ := unstructured.NestedString(obj.Object, f.PhasePath...)
		if phase != "" && slices.Contains(f.Phases, phase) {
			return true
		}
	}
	if len(f.Conditions) == 0 {
		return false
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["status"] != "True" {
			continue
		}
		if t, ok := m["type"].(string); ok && slices.Contains(f.Conditions, t) {
			return true
		}
	}
	return false
}

// Normaliser turns one kind of object into a Workload. It fills what only the
// kind knows: the gang (Pods, Roles, native MinPods), GPU requests, product,
// priority class, scheduler, Templates, Owner and the kind's default Class.
// Normalize fills the rest from the object's metadata, the same way for every
// kind: identity, labels, annotations and the mandate.dev/* overrides.
type Normaliser func(*unstructured.Unstructured) (Workload, error)

var registry = struct {
	sync.RWMutex
	byGVK map[schema.GroupVersionKind]Kind
}{byGVK: map[schema.GroupVersionKind]Kind{}}

// Register makes k a governed kind. A later registration for the same GVK
// replaces the earlier one. It panics on an incomplete Kind: a missing
// Normaliser, resource or label is a programming error.
func Register(k Kind) {
	if k.Normalise == nil || k.Resource == "" || k.Label == "" || k.GVK.Kind == "" {
		panic(fmt.Sprintf("workload: incomplete registration of %s: GVK, Resource, Label and Normalise are required", gvkString(k.GVK)))
	}
	registry.Lock()
	defer registry.Unlock()
	registry.byGVK[k.GVK] = k
}

// Lookup returns the registration of gvk.
func Lookup(gvk schema.GroupVersionKind) (Kind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	k, ok := registry.byGVK[gvk]
	return k, ok
}

// Kinds lists the registered kinds: the core group's first, then by
// group, version and kind.
func Kinds() []Kind {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Kind, 0, len(registry.byGVK))
	for _, k := range registry.byGVK {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Kind) int {
		if (a.GVK.Group == "") != (b.GVK.Group == "") {
			if a.GVK.Group == "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.GVK.Group+"/"+a.GVK.Version+"/"+a.GVK.Kind, b.GVK.Group+"/"+b.GVK.Version+"/"+b.GVK.Kind)
	})
	return out
}

// LookupGroupKind returns the registration of a group and kind, whatever
// its version.
func LookupGroupKind(gk schema.GroupKind) (Kind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	for gvk, k := range registry.byGVK {
		if gvk.GroupKind() == gk {
			return k, true
		}
	}
	return Kind{}, false
}

// IsGangOwner reports whether ref names a registered GangOwner kind.
func IsGangOwner(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	k, ok := Lookup(gv.WithKind(ref.Kind))
	return ok && k.GangOwner
}

func kindList() string {
	kinds := Kinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = gvkString(k.GVK)
	}
	return strings.Join(names, ", ")
}

// GangOwners lists the registered GangOwner kinds, in Kinds order.
func GangOwners() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, k := range Kinds() {
		if k.GangOwner {
			out = append(out, k.GVK)
		}
	}
	return out
}

// LookupResource returns the registration of an API group's resource.
func LookupResource(group, resource string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.GVK.Group == group && k.Resource == resource {
			return k, true
		}
	}
	return Kind{}, false
}
