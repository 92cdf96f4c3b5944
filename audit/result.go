package audit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// Verdict is what the candidate would do to an existing workload.
type Verdict string

// The verdicts, most severe first.
const (
	// VerdictDeny: the candidate would deny the workload were it created now.
	VerdictDeny Verdict = "would-deny"
	// VerdictChange: admitted, but the directives rendered onto it differ
	// from what it carries (priority class, queue, preemptibility,
	// scheduler keys, gang or topology annotations).
	VerdictChange Verdict = "would-change"
	// VerdictUnchanged: admitted exactly as it is.
	VerdictUnchanged Verdict = "unchanged"
)

func (v Verdict) rank() int {
	switch v {
	case VerdictDeny:
		return 0
	case VerdictChange:
		return 1
	}
	return 2
}

// Report is the audit of every workload against one candidate.
type Report struct {
	// Revision of the candidate policy.
	Revision string `json:"revision"`
	// Source the workloads were read from.
	Source    string   `json:"source"`
	Summary   Summary  `json:"summary"`
	Workloads []Result `json:"workloads"`
	// Notes say what was skipped and why.
	Notes []string `json:"notes"`
}

// Summary counts the verdicts.
type Summary struct {
	Workloads int `json:"workloads"`
	Denied    int `json:"denied"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	// Warned counts admitted workloads with warnings or warn/dryrun
	// violations.
	Warned int `json:"warned"`
}

// Result is the outcome for one workload.
type Result struct {
	Workload WorkloadRef `json:"workload"`
	Verdict  Verdict     `json:"verdict"`
	// Violations are the enforced ones: every reason it would be denied.
	Violations []evaluator.Violation `json:"violations"`
	// Warned and DryRun are violations whose action is warn or dryrun.
	Warned   []evaluator.Violation `json:"warned"`
	DryRun   []evaluator.Violation `json:"dryrun"`
	Warnings []string              `json:"warnings"`
	// Reasons are the model's warnings as data (evaluator.Decision.Reasons):
	// what explain and the cluster report read, never the text.
	Reasons []evaluator.Violation `json:"reasons,omitempty"`
	// Error says why Mandate cannot read the workload (denied as bad input).
	Error string `json:"error,omitempty"`
	// Directives the candidate renders; empty when denied.
	Directives *evaluator.Directives `json:"directives,omitempty"`
	// Differences name, one per entry, the directives that differ from
	// those the workload was admitted with ("queue: research ->
	// research-llm").
	Differences []string `json:"differences"`
	// Changes are the edits the candidate's mutation would make, as JSON
	// patch operations with the current value beside the new one.
	Changes []Change `json:"changes"`
	// Subtracted is what was taken out of the cluster state before deciding.
	Subtracted Subtracted `json:"subtracted"`
	// Shape is the gang as Mandate reads it: pods, GPUs per pod, resource
	// and product (what a report counts as demand).
	Shape Shape `json:"shape"`
	// Explanations are the decision's, per dimension: verdict, limit and
	// current value (read by mandate explain).
	Explanations []evaluator.Explanation `json:"explanations,omitempty"`
	Notes        []string                `json:"notes,omitempty"`
}

// WorkloadRef names a workload.
type WorkloadRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	// UID is the object's, when it has one (a live cluster's).
	UID    string `json:"uid,omitempty"`
	Tenant string `json:"tenant"`
}

func (w WorkloadRef) String() string {
	return workload.Describe(w.APIVersion, w.Kind, w.Namespace, w.Name)
}

// Shape is a workload's GPU demand.
type Shape struct {
	Pods       int    `json:"pods"`
	GPUsPerPod int    `json:"gpusPerPod"`
	TotalGPUs  int    `json:"totalGPUs"`
	Resource   string `json:"resource,omitempty"`
	Product    string `json:"product,omitempty"`
}

// Subtracted is the workload's own pods, taken out of usage and placement
// while it was decided.
type Subtracted struct {
	Pods int            `json:"pods"`
	GPUs map[string]int `json:"gpus"`
}

// Change is one edit of the mutation.
type Change struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	From any    `json:"from,omitempty"`
	To   any    `json:"to,omitempty"`
}

func refOf(obj *unstructured.Unstructured, tenant string) WorkloadRef {
	return WorkloadRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()), Tenant: tenant}
}

// fill records the decision and, when admitted, what the mutation would
// change. The policy-revision annotation is left out: every revision
// writes its own, which is no change to the workload.
func (r *Result) fill(obj *unstructured.Unstructured, rv review.Result) error {
	d := rv.Decision
	r.Violations, r.Warned, r.DryRun, r.Warnings, r.Reasons = d.Violations, d.Warned, d.DryRun, d.Warnings, d.Reasons
	r.Explanations = d.Explanations
	if !d.Allowed {
		r.Verdict = VerdictDeny
		return nil
	}
	r.Directives = &d.Directives
	mutated := rv.Mutated.DeepCopy()
	annotations := mutated.GetAnnotations()
	if v, ok := obj.GetAnnotations()[review.AnnotationPolicyRevision]; ok {
		annotations[review.AnnotationPolicyRevision] = v
	} else {
		delete(annotations, review.AnnotationPolicyRevision)
	}
	mutated.SetAnnotations(annotations)
	ops, err := scheduler.Patch(obj, mutated)
	if err != nil {
		return err
	}
	for _, op := range ops {
		from, _ := lookup(obj.Object, op.Path)
		r.Changes = append(r.Changes, Change{Op: op.Operation, Path: op.Path, From: from, To: op.Value})
	}
	r.Verdict = VerdictUnchanged
	if len(r.Changes) > 0 {
		r.Verdict = VerdictChange
		r.Differences = differences(obj, d.Directives)
	}
	return nil
}

// differences compares the directives a workload carries (the
// mandate.dev/directives annotation of its admission) with the
// candidate's, field by field.
func differences(obj *unstructured.Unstructured, next evaluator.Directives) []string {
	recorded, ok, err := scheduler.RecordedDirectives(obj.GetAnnotations())
	if err != nil {
		return []string{fmt.Sprintf("carries an %v", err)}
	}
	if !ok {
		return []string{fmt.Sprintf("not admitted by Mandate yet (no %s); would get %s", scheduler.AnnotationDirectives, summary(next))}
	}
	before, err := fields(recorded)
	if err != nil {
		return []string{err.Error()}
	}
	after, err := fields(next)
	if err != nil {
		return []string{err.Error()}
	}
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if !reflect.DeepEqual(before[k], after[k]) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, compact(before[k]), compact(after[k])))
		}
	}
	return out
}

// fields is d as its JSON object, field by field, with its tier always
// named (Directives.TierName), so that a class turned borrowed differs in
// its class, not in a tier only recorded beside borrowed classes.
func fields(d evaluator.Directives) (map[string]any, error) {
	d.Tier = d.TierName()
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the directives: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("unable to decode the directives: %w", err)
	}
	return m, nil
}

// summary is directives in the one wording of scheduler.Placement:
// "kai-scheduler queue=product priority=build preemptible=false gang=2
// topology=clique".
func summary(d evaluator.Directives) string { return scheduler.PlacementOf(d).String() }

// lookup resolves a JSON pointer (RFC 6901) in doc.
func lookup(doc any, pointer string) (any, bool) {
	if pointer == "" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// finish sorts the workloads and counts the verdicts; lists are empty
// rather than null in JSON.
func (rep *Report) finish() {
	sort.SliceStable(rep.Workloads, func(i, j int) bool {
		a, b := rep.Workloads[i], rep.Workloads[j]
		if a.Verdict != b.Verdict {
			return a.Verdict.rank() < b.Verdict.rank()
		}
		return false // plan already ordered them by namespace, kind and name
	})
	s := Summary{Workloads: len(rep.Workloads)}
	for i := range rep.Workloads {
		r := &rep.Workloads[i]
		switch r.Verdict {
		case VerdictDeny:
			s.Denied++
		case VerdictChange:
			s.Changed++
		default:
			s.Unchanged++
		}
		if r.Verdict != VerdictDeny && (len(r.Warnings)+len(r.Warned)+len(r.DryRun)) > 0 {
			s.Warned++
		}
		r.Violations = nonNil(r.Violations)
		r.Warned = nonNil(r.Warned)
		r.DryRun = nonNil(r.DryRun)
		r.Warnings = nonNil(r.Warnings)
		r.Differences = nonNil(r.Differences)
		r.Changes = nonNil(r.Changes)
	}
	rep.Summary = s
	rep.Workloads = nonNil(rep.Workloads)
	rep.Notes = nonNil(rep.Notes)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
