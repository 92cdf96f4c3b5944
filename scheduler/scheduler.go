// Package scheduler renders the authority model's directives onto a
// workload for the scheduler that will run it. Rego decides what the model
// wants (queue, priority class, preemptibility, gang minimum, topology); the
// adapters here decide how each scheduler is told: Volcano through pod
// annotations and a PodGroup, KAI through labels and annotations on the top
// owner that its podgrouper reads, the default scheduler through the pod
// templates alone. Adapters mutate the object in place, deterministically
// and idempotently, and touch only the fields the authority model owns; the
// webhook turns the change into a JSON patch with Patch.
package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// Adapter tells one scheduler what the authority model decided.
type Adapter interface {
	// Name is the scheduler name as Directives.Scheduler spells it.
	Name() string
	// Apply renders d onto obj, whose normalised view is w. It mutates obj
	// in place; applying twice changes nothing the second time. On error obj
	// is left unchanged.
	Apply(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error
}

// The scheduler names Directives.Scheduler may carry, as the registry
// (package facts) declares them.
var (
	Volcano = facts.Volcano.Name
	KAI     = facts.KAI.Name
	Kueue   = facts.Kueue.Name
	Default = facts.Default.Name
)

var (
	// ErrUnknownScheduler is returned by For for a scheduler with no adapter.
	ErrUnknownScheduler = errors.New("unknown scheduler")
	// ErrInvalidDirectives marks directives an adapter cannot render: a
	// label value the API server would reject, a topology level without a
	// tier, an object that does not match its Workload.
	ErrInvalidDirectives = errors.New("invalid directives")
)

// For returns the adapter for a Directives.Scheduler value; "" means the
// default scheduler.
func For(scheduler string) (Adapter, error) {
	if scheduler == "" {
		scheduler = Default
	}
	if in, ok := Lookup(scheduler); ok {
		return in, nil
	}
	return nil, fmt.Errorf("%w %q: known schedulers are %s", ErrUnknownScheduler, scheduler, facts.List(Names()))
}

func init() { Register(Default, applyDefault) }

// applyDefault renders only what every scheduler understands.
func applyDefault(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error {
	_, err := applyCommon(obj, w, d)
	return err
}

// applyCommon renders what every adapter does: Directives.Labels and
// Annotations onto the object's metadata, and the priority class onto each
// pod template. It returns the pod templates for the adapter to continue.
func applyCommon(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) ([]podTemplate, error) {
	if obj == nil || obj.Object == nil {
		return nil, fmt.Errorf("%w: no object", ErrInvalidDirectives)
	}
	if obj.GetKind() != w.Kind || obj.GetAPIVersion() != w.APIVersion {
		return nil, fmt.Errorf("%w: object is %s %s but the workload %s %s",
			ErrInvalidDirectives, obj.GetAPIVersion(), obj.GetKind(), w.APIVersion, w.Kind)
	}
	templates, err := templatesOf(obj, w)
	if err != nil {
		return nil, err
	}
	if err := validateMetadata(d.Labels, d.Annotations); err != nil {
		return nil, err
	}
	if err := validateName("priority class", d.PriorityClass); err != nil {
		return nil, err
	}
	marks, err := Marks(d)
	if err != nil {
		return nil, err
	}
	meta := ensureMap(obj.Object, "metadata")
	setAll(meta, "labels", d.Labels)
	setAll(meta, "annotations", d.Annotations)
	setAll(meta, "annotations", map[string]string{AnnotationDirectives: marks})
	podLabels := map[string]string{workload.LabelPreemptible: strconv.FormatBool(d.Preemptible)}
	for k, v := range d.Labels {
		podLabels[k] = v
	}
	for _, t := range templates {
		setAll(ensureMap(t.root, "metadata"), "labels", podLabels)
		if d.PriorityClass != "" {
			t.setPriorityClass(d.PriorityClass)
		}
		applyPlacement(t, d.Placement)
	}
	return templates, nil
}

// Marks every admitted object carries.
const (
	// AnnotationDirectives records, as JSON, the directives the object was
	// admitted with: the gang controller builds PodGroups from it, and the
	// pods of an admitted workload are recognised by their owner carrying
	// it. Deterministic for given directives, so mutation stays idempotent.
	AnnotationDirectives = "mandate.dev/directives"
)

// validateMetadata rejects keys and values the API server would refuse, so
// a bad directive fails here with a clear message instead of as a patch.
func validateMetadata(labels, annotations map[string]string) error {
	for _, k := range sortedKeys(labels) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("%w: label key %q: %v", ErrInvalidDirectives, k, errs)
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return fmt.Errorf("%w: label %s value %q: %v", ErrInvalidDirectives, k, labels[k], errs)
		}
	}
	for _, k := range sortedKeys(annotations) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("%w: annotation key %q: %v", ErrInvalidDirectives, k, errs)
		}
	}
	return nil
}

// validateName rejects a non-empty name that is not a DNS-1123 subdomain,
// the rule for priority class and Volcano queue names.
func validateName(what, name string) error {
	if name == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%w: %s %q: %v", ErrInvalidDirectives, what, name, errs)
	}
	return nil
}

// setAll sets every entry of kv in the string map parent[field], creating it
// when needed; an empty kv leaves parent untouched.
func setAll(parent map[string]any, field string, kv map[string]string) {
	if len(kv) == 0 {
		return
	}
	m := ensureMap(parent, field)
	for _, k := range sortedKeys(kv) {
		m[k] = kv[k]
	}
}

// ensureMap returns parent[field] as an object, creating (or replacing a
// null) as needed.
func ensureMap(parent map[string]any, field string) map[string]any {
	if m, ok := parent[field].(map[string]any); ok {
		return m
	}
	m := map[string]any{}
	parent[field] = m
	return m
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
