// Package explain answers, for one workload admitted or not, why it runs or
// waits now: each authority dimension's verdict with its limit and current
// value decided again against the cluster as it is (the workload's own pods
// taken out, as audit does), the directives it carries, the scheduler's view
// of it (PodGroup phase and conditions, its Queue's state and capacity,
// Kueue Workload conditions), and the concrete change that would let it run.
package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/review"
)

// Target names the workload to explain: a kind (Job, PyTorchJob, Pod,
// Volcano Job "vcjob" …, case-insensitive, singular or plural), its
// namespace and name.
type Target struct {
	Kind      string
	Namespace string
	Name      string
}

func (t Target) String() string { return fmt.Sprintf("%s/%s -n %s", t.Kind, t.Name, t.Namespace) }

// Options say what to explain against.
type Options struct {
	// Decider is the active policy revision and Model its authority model.
	Decider  review.Decider
	Model    model.Model
	Revision string
	// Exempt namespaces are never governed (see audit.Options).
	Exempt []string
	// State, when set, is the cluster state to decide against, holding the
	// inventory already (see audit.Options.State).
	State *cluster.State
}

// Explanation is the answer for one workload.
type Explanation struct {
	Workload audit.WorkloadRef `json:"workload"`
	Revision string            `json:"revision"`
	Source   string            `json:"source"`
	// CanRunNow: admitted now, nothing makes it wait, and its scheduler
	// queue exists and is open.
	CanRunNow bool `json:"canRunNow"`
	// Dimensions are the decision's explanations, one per dimension.
	Dimensions []evaluator.Explanation `json:"dimensions"`
	// Blocks are what keeps it from running, most binding first.
	Blocks []Block `json:"blocks"`
	// Warnings the decision carries that do not block.
	Warnings []string `json:"warnings"`
	// Directives the model gives it now; nil when it would be denied.
	Directives *evaluator.Directives `json:"directives,omitempty"`
	// Scheduler is the scheduler's view of it: PodGroups, its Queue, Kueue
	// Workloads. Kinds the cluster does not serve are simply absent.
	Scheduler []SchedulerObject `json:"scheduler"`
	// Eviction says whether it may be evicted for other work and by which
	// rule; nil when it would not be admitted.
	Eviction *Eviction `json:"eviction,omitempty"`
	// Shape is its GPU demand.
	Shape audit.Shape `json:"shape"`
	// Subtracted is what of its own was taken out before deciding: its
	// running pods (none while it is pending).
	Subtracted audit.Subtracted `json:"subtracted"`
	Notes      []string         `json:"notes,omitempty"`
}

// Block is one reason the workload cannot run now.
type Block struct {
	// Dimension is the authority dimension (quota, topology, priority,
	// tenancy, preemption) or "scheduler".
	Dimension string `json:"dimension"`
	// Code is the rule (QUOTA_CEILING_BUSY, TOPOLOGY_NEVER_FITS,
	// QUEUE_MISSING …).
	Code string `json:"code"`
	// Message says what holds it, with the limit and the current value.
	Message string `json:"message"`
	// Limit and Current are the dimension's explanation, when it has one.
	Limit   string `json:"limit,omitempty"`
	Current string `json:"current,omitempty"`
	// Unblock is the change that would let it run.
	Unblock string `json:"unblock"`
}

// Explain decides the target again against inv as it is now and gathers
// the scheduler's objects about it from sched (nil: none known).
func Explain(ctx context.Context, inv *inventory.Inventory, sched *SchedulerState, t Target, o Options) (*Explanation, error) {
	obj, err := find(inv, t)
	if err != nil {
		return nil, err
	}
	rep, err := audit.Audit(ctx, inv, audit.Options{
		Decider: o.Decider, Model: o.Model, Revision: o.Revision, Namespace: obj.GetNamespace(), Exempt: o.Exempt,
		Explain: true,
	})
	if err != nil {
		return nil, fmt.Errorf("unable to decide %s again: %w", t, err)
	}
	var res *audit.Result
	for i := range rep.Workloads {
		w := rep.Workloads[i].Workload
		if w.Kind == obj.GetKind() && w.APIVersion == obj.GetAPIVersion() && w.Name == obj.GetName() {
			res = &rep.Workloads[i]
		}
	}
	if res == nil {
		return nil, fmt.Errorf("%w: %s %s/%s is not governed by Mandate (finished, or in a namespace it never governs)",
			ErrBadTarget, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	return build(res, obj, inv, sched, o, holdersOf(inv, o.Model)), nil
}

// All explains every governed workload of inv, deciding each once.
func All(ctx context.Context, inv *inventory.Inventory, sched *SchedulerState, o Options) ([]*Explanation, error) {
	rep, err := audit.Audit(ctx, inv, audit.Options{
		Decider: o.Decider, Model: o.Model, Revision: o.Revision, Exempt: o.Exempt, Explain: true, State: o.State,
	})
	if err != nil {
		return nil, fmt.Errorf("unable to decide the workloads again: %w", err)
	}
	byRef := map[string]*unstructured.Unstructured{}
	for _, obj := range slices.Concat(inv.Owners, inv.Pods) {
		byRef[refKey(obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), obj.GetName())] = obj
	}
	h := holdersOf(inv, o.Model)
	out := make([]*Explanation, 0, len(rep.Workloads))
	for i := range rep.Workloads {
		w := rep.Workloads[i].Workload
		obj := byRef[refKey(w.APIVersion, w.Kind, w.Namespace, w.Name)]
		if obj == nil {
			continue
		}
		e := build(&rep.Workloads[i], obj, inv, sched, o, h)
		e.Source = rep.Source
		out = append(out, e)
	}
	return out, nil
}

func refKey(apiVersion, kind, namespace, name string) string {
	return apiVersion + "|" + kind + "|" + namespace + "|" + name
}

// build explains one decided workload.
func build(res *audit.Result, obj *unstructured.Unstructured, inv *inventory.Inventory, sched *SchedulerState, o Options, h holders) *Explanation {
	e := &Explanation{
		Workload: res.Workload, Revision: o.Revision, Source: inv.Source,
		Dimensions: res.Explanations, Directives: res.Directives, Subtracted: res.Subtracted,
		Shape: res.Shape, Notes: res.Notes,
	}
	if res.Error != "" {
		e.Blocks = append(e.Blocks, Block{Dimension: "input", Code: "UNREADABLE", Message: res.Error,
			Unblock: "fix the workload so Mandate can read it"})
	}
	limits := map[string]evaluator.Explanation{}
	for _, x := range res.Explanations {
		limits[string(x.Dimension)] = x
	}
	for _, v := range res.Violations {
		e.Blocks = append(e.Blocks, blockOf(v, limits, e, h))
	}
	// The reasons that make an admitted workload wait block it; their
	// warnings are not repeated among the others.
	shown := map[string]int{}
	for _, code := range waits {
		for _, r := range res.Reasons {
			if r.Code == code {
				e.Blocks = append(e.Blocks, blockOf(r, limits, e, h))
				shown[r.Warning]++
			}
		}
	}
	for _, w := range res.Warnings {
		if shown[w] > 0 {
			shown[w]--
			continue
		}
		e.Warnings = append(e.Warnings, w)
	}
	e.Eviction = evictionOf(obj, res.Directives, e, h)
	e.Scheduler = schedulerView(obj, res.Directives, sched)
	e.Blocks = append(e.Blocks, schedulerBlocks(e.Scheduler)...)
	e.CanRunNow = len(e.Blocks) == 0
	return e
}

// waits are the codes of the reasons an admitted workload waits for, in
// the order its blocks name them: its quota ceiling is busy, or no domain
// has room for the gang yet.
var waits = []string{"QUOTA_CEILING_BUSY", "TOPOLOGY_WAITS"}

// find looks the target up among the inventory's governed objects.
func find(inv *inventory.Inventory, t Target) (*unstructured.Unstructured, error) {
	kind := strings.ToLower(t.Kind)
	var matches []*unstructured.Unstructured
	for _, obj := range slices.Concat(inv.Owners, inv.Pods) {
		if obj.GetNamespace() == t.Namespace && obj.GetName() == t.Name && kindMatches(kind, obj) {
			matches = append(matches, obj)
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("%w: no %s named %q in namespace %q", ErrBadTarget, t.Kind, t.Name, t.Namespace)
	case 1:
		return matches[0], nil
	}
	return nil, fmt.Errorf("%w: %d workloads match %s; name the kind with its group (e.g. jobs.batch.volcano.sh)", ErrBadTarget, len(matches), t)
}

// kindMatches accepts the kind, its plural, kubectl's short names and
// KIND.GROUP.
func kindMatches(kind string, obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	k := strings.ToLower(gvk.Kind)
	names := []string{k, k + "s", k + "." + gvk.Group, k + "s." + gvk.Group}
	switch {
	case gvk.Group == "batch.volcano.sh":
		names = append(names, "vcjob", "vcjobs")
	case gvk.Kind == "Pod":
		names = append(names, "po")
	}
	return slices.Contains(names, kind)
}
