package explain

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
)

// SchedulerKinds are the kinds of SchedulerState, from the registry
// (package facts): each scheduler's PodGroups or Workloads, and its queues
// when they are cluster-scoped.
func SchedulerKinds() []facts.Kind {
	var out []facts.Kind
	for _, s := range facts.All() {
		out = append(out, s.GroupKinds...)
		if q := s.QueueKind; q != nil && !q.Namespaced {
			out = append(out, q.Kind)
		}
	}
	return out
}

// SchedulerState is what the schedulers say: their objects, and which of
// their kinds the cluster serves (a kind not served is simply not shown;
// a queue is missing only when its kind is served).
type SchedulerState struct {
	Objects []*unstructured.Unstructured
	Served  map[schema.GroupVersionKind]bool
}

// ReadSchedulerState picks the scheduler objects out of a snapshot stream;
// a kind counts as served when the snapshot holds one of its objects.
func ReadSchedulerState(r io.Reader) (*SchedulerState, error) {
	s := &SchedulerState{Served: map[schema.GroupVersionKind]bool{}}
	err := cluster.EachObject(r, func(obj *unstructured.Unstructured) error {
		if gvk := obj.GroupVersionKind(); isSchedulerKind(gvk) {
			s.Objects = append(s.Objects, obj)
			s.Served[gvk] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unable to read the schedulers' objects: %w", err)
	}
	return s, nil
}

// ListSchedulerState lists the scheduler objects of namespace (and every
// queue) from an API server; kinds it does not serve are left out.
func ListSchedulerState(ctx context.Context, c client.Reader, namespace string) (*SchedulerState, error) {
	s := &SchedulerState{Served: map[schema.GroupVersionKind]bool{}}
	for _, k := range SchedulerKinds() {
		gvk := k.GVK
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		var opts []client.ListOption
		if k.Namespaced {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("unable to list %s (%s): %w", gvk.Kind, gvk.GroupVersion(), err)
		}
		s.Served[gvk] = true
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(gvk)
			s.Objects = append(s.Objects, obj)
		}
	}
	return s, nil
}

func isSchedulerKind(gvk schema.GroupVersionKind) bool {
	for _, k := range SchedulerKinds() {
		if k.GVK == gvk {
			return true
		}
	}
	return false
}

// SchedulerObject is one scheduler object about the workload.
type SchedulerObject struct {
	Kind string `json:"kind"`
	// Group is the API group (which scheduler).
	Group string `json:"group"`
	Name  string `json:"name"`
	// Missing: the queue the workload names does not exist.
	Missing bool `json:"missing,omitempty"`
	// Phase of a PodGroup, state of a Volcano Queue.
	Phase string `json:"phase,omitempty"`
	// Conditions as "Type=Status (Reason): message".
	Conditions []string `json:"conditions,omitempty"`
	// unschedulable are those of Conditions whose type is Unschedulable
	// and status True, read from the object, not from the text.
	unschedulable []string
	// Capacity and Allocated of a Queue, rendered.
	Capacity  string `json:"capacity,omitempty"`
	Allocated string `json:"allocated,omitempty"`
}

// schedulerView finds the PodGroups and Kueue Workloads of obj (owned by
// it, or named after it) and the queue its directives name.
func schedulerView(obj *unstructured.Unstructured, d *evaluator.Directives, st *SchedulerState) []SchedulerObject {
	if st == nil {
		return nil
	}
	var out []SchedulerObject
	for _, o := range st.Objects {
		gvk := o.GroupVersionKind()
		if _, _, queue := facts.QueueKindOf(gvk.GroupKind()); queue || o.GetNamespace() != obj.GetNamespace() || !about(o, obj) {
			continue
		}
		so := SchedulerObject{Kind: gvk.Kind, Group: gvk.Group, Name: o.GetName()}
		so.Conditions, so.unschedulable = conditions(o)
		so.Phase, _, _ = unstructured.NestedString(o.Object, "status", "phase")
		out = append(out, so)
	}
	if q, qk := queueOf(obj, d); q != "" && st.Served[qk.GVK] {
		gvk := qk.GVK
		so := SchedulerObject{Kind: "Queue", Group: gvk.Group, Name: q, Missing: true}
		for _, o := range st.Objects {
			if o.GroupVersionKind() == gvk && o.GetName() == q {
				so.Missing = false
				so.Phase, _, _ = unstructured.NestedString(o.Object, "status", "state")
				so.Conditions, _ = conditions(o)
				so.Capacity = qk.CapacityPrefix + render(o.Object, qk.CapacityPath...)
				so.Allocated = render(o.Object, "status", "allocated")
			}
		}
		out = append(out, so)
	}
	return out
}

// queueOf is the queue the workload is told to use and its kind: the
// directives' (when admitted) or the queue keys it carries, for the
// schedulers whose queues are cluster-scoped.
func queueOf(obj *unstructured.Unstructured, d *evaluator.Directives) (string, facts.QueueKind) {
	if d != nil && d.Queue != "" {
		if s, ok := facts.Lookup(d.Scheduler); ok && s.QueueKind != nil && !s.QueueKind.Namespaced {
			return d.Queue, *s.QueueKind
		}
		return "", facts.QueueKind{}
	}
	for _, s := range facts.All() {
		if s.QueueKind == nil || s.QueueKind.Namespaced {
			continue
		}
		from := obj.GetAnnotations()
		if s.Queue.IsLabel() {
			from = obj.GetLabels()
		}
		if q := from[s.Queue.Name]; q != "" {
			return q, *s.QueueKind
		}
	}
	return "", facts.QueueKind{}
}

// about says whether o (a PodGroup or Workload) belongs to obj.
func about(o, obj *unstructured.Unstructured) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == obj.GetKind() && ref.Name == obj.GetName() {
			return true
		}
	}
	return o.GetName() == obj.GetName()
}

// conditions renders o's status conditions, and says which are
// Unschedulable=True, from the fields, so no block reads the rendered text.
func conditions(o *unstructured.Unstructured) (out, unschedulable []string) {
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		s := fmt.Sprintf("%v=%v", m["type"], m["status"])
		if r, _ := m["reason"].(string); r != "" {
			s += " (" + r + ")"
		}
		if msg, _ := m["message"].(string); msg != "" {
			s += ": " + msg
		}
		out = append(out, s)
		if m["type"] == "Unschedulable" && m["status"] == "True" {
			unschedulable = append(unschedulable, s)
		}
	}
	return out, unschedulable
}

// render writes a nested map as "k: v, …" sorted; "" when absent.
func render(obj map[string]any, path ...string) string {
	m, ok, _ := unstructured.NestedMap(obj, path...)
	if !ok || len(m) == 0 {
		return ""
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s: %v", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// schedulerBlocks are the scheduler-side reasons it cannot run: a missing
// or closed queue, a PodGroup the scheduler says it cannot schedule.
func schedulerBlocks(view []SchedulerObject) []Block {
	var out []Block
	for _, o := range view {
		switch {
		case isQueue(o) && o.Missing:
			out = append(out, Block{Dimension: "scheduler", Code: "QUEUE_MISSING",
				Message: fmt.Sprintf("queue %s (%s) does not exist: the scheduler never runs work that names it", o.Name, o.Group),
				Limit:   "the queue must exist", Current: "missing",
				Unblock: fmt.Sprintf("create queue %s: mandate sync applies the model's queues", o.Name)})
		case isQueue(o) && queueHasState(o) && o.Phase != "" && o.Phase != "Open":
			out = append(out, Block{Dimension: "scheduler", Code: "QUEUE_CLOSED",
				Message: fmt.Sprintf("%s queue %s is %s: it admits no new work", queueTitle(o), o.Name, o.Phase),
				Limit:   "state Open", Current: "state " + o.Phase,
				Unblock: fmt.Sprintf("open queue %s (vcctl queue operate --name %s --action open, or mandate sync)", o.Name, o.Name)})
		case o.Kind == "PodGroup":
			for _, c := range o.unschedulable {
				out = append(out, Block{Dimension: "scheduler", Code: "PODGROUP_UNSCHEDULABLE",
					Message: fmt.Sprintf("PodGroup %s: %s", o.Name, c), Current: "phase " + o.Phase,
					Unblock: "see the condition's message: the scheduler's own reason"})
			}
		}
	}
	return out
}

// isQueue reports whether o is a registered scheduler's queue.
func isQueue(o SchedulerObject) bool {
	_, _, ok := facts.QueueKindOf(schema.GroupKind{Group: o.Group, Kind: o.Kind})
	return ok
}

// queueHasState reports whether o is a queue that admits work only while
// Open (facts.QueueKind.HasState).
func queueHasState(o SchedulerObject) bool {
	q, _, _ := facts.QueueKindOf(schema.GroupKind{Group: o.Group, Kind: o.Kind})
	return q.HasState
}

// queueTitle names the scheduler of queue o.
func queueTitle(o SchedulerObject) string {
	_, s, _ := facts.QueueKindOf(schema.GroupKind{Group: o.Group, Kind: o.Kind})
	return s.Title
}
