// Package audit evaluates the workloads that already exist in a cluster
// (from a snapshot file or listed from the API server) against a candidate
// policy revision, as each would be decided at admission now, and reports
// which it would deny, which it would change (the directives rendered onto
// them differ from what they carry) and which it leaves as they are, so a
// team knows what promoting a bundle will do before it does it.
//
// An existing workload's own pods are already counted in the cluster state,
// so each one is decided with its own pods taken out: their GPUs leave the
// tenant's (and every ancestor's) usage, total and non-preemptible, and
// their GPUs on their nodes are free again for placement. Every other pod
// stays counted. Nothing is reserved: decisions are dry runs.
package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// DefaultUser is the user the audit's decisions are made for.
const DefaultUser = "mandate-audit"

// Options say what to audit against.
type Options struct {
	// Decider is the candidate policy revision.
	Decider review.Decider
	// Model is the candidate's authority model: its topology levels and
	// tenant hierarchy shape the cluster state.
	Model model.Model
	// Revision names the candidate in the report.
	Revision string
	// Namespace limits the audit to one namespace ("" audits all); usage
	// and free capacity still count the whole cluster.
	Namespace string
	// Exempt namespaces are never governed, beside review.SystemNamespaces
	// (Mandate's own namespace, as the webhook registration excludes it).
	Exempt []string
	// User and Groups the decisions are made for; DefaultUser when empty.
	User   string
	Groups []string
	// Explain asks for the per-dimension explanations of every decision
	// (Result.Explanations); they cost a third of an evaluation.
	Explain bool
	// State, when set, is the state to decide against, holding the
	// inventory's nodes, namespaces and pods already (a caller that reads
	// it afterwards, as clusterreport.Build does, instead of a second
	// state of the whole cluster); nil: Audit builds and counts its own.
	// Each decided workload's own pods are taken out of it and put back.
	State *cluster.State
}

// entry is one workload to audit and the pods of it the state counts.
type entry struct {
	// obj is nil for a workload that is not audited (finished, exempt, in
	// another namespace) but whose pods still count.
	obj  *unstructured.Unstructured
	pods []*corev1.Pod
	// facts are pods as ListCounted keeps them, typed (cluster.PodFacts.Pod)
	// only when counted or decided: at 150,000 pods the typed pods of a
	// whole inventory would be more than everything else the audit holds.
	facts []*cluster.PodFacts
	notes []string
}

// typed is every pod of e, typed.
func (e entry) typed() []*corev1.Pod {
	if len(e.facts) == 0 {
		return e.pods
	}
	out := slices.Clip(e.pods)
	for _, f := range e.facts {
		out = append(out, f.Pod())
	}
	return out
}

// Audit decides every workload of inv against the candidate and reports
// the outcome per workload, sorted: would-deny first, then would-change,
// then unchanged, each by namespace, kind and name.
func Audit(ctx context.Context, inv *inventory.Inventory, o Options) (*Report, error) {
	state, counted := o.State, o.State != nil
	if !counted {
		var err error
		if state, err = cluster.New(o.Model); err != nil {
			return nil, err
		}
		for _, obj := range slices.Concat(inv.Nodes, inv.Namespaces, inv.Claims, inv.Templates, inv.Devices) {
			if err := state.Add(obj); err != nil {
				return nil, err
			}
		}
	}
	entries, rep, err := plan(inv, o)
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		if !counted {
			for _, p := range e.pods {
				state.UpsertPod(p)
			}
			for _, f := range e.facts {
				state.UpsertFacts(f)
			}
		}
		if e.obj == nil {
			entries[i].pods, entries[i].facts = nil, nil // counted; only decisions read them again
		}
	}
	user := o.User
	if user == "" {
		user = DefaultUser
	}
	req := evaluator.Request{Operation: "CREATE", User: user, Groups: o.Groups, DryRun: true}
	reviewer := &review.Service{Decider: o.Decider, State: state, Claims: state.Claims(), Explain: o.Explain}
	own := owned{counting: o.Model.Counting(), claims: state.ClaimLookup()}
	log := ctrl.LoggerFrom(ctx)
	for _, e := range entries {
		if e.obj == nil {
			continue
		}
		res, err := decide(ctx, reviewer, state, e, req, own)
		if err != nil {
			return nil, err
		}
		log.V(1).Info("audited", "kind", e.obj.GetKind(), "namespace", e.obj.GetNamespace(), "name", e.obj.GetName(), "verdict", res.Verdict)
		rep.Workloads = append(rep.Workloads, res)
	}
	rep.Revision = o.Revision
	rep.Source = inv.Source
	rep.Notes = append(slices.Clone(inv.Notes), rep.Notes...)
	rep.finish()
	return rep, nil
}

// decide reviews one workload with its own pods taken out of the state,
// then counts them again.
func decide(ctx context.Context, r *review.Service, state *cluster.State, e entry, req evaluator.Request, own owned) (Result, error) {
	for _, p := range e.pods {
		state.DeletePod(p.Namespace, p.Name)
	}
	rv, err := r.Review(ctx, e.obj, req)
	for _, p := range e.pods {
		state.UpsertPod(p)
	}
	res := Result{Workload: refOf(e.obj, rv.Workload.Tenant), Notes: e.notes, Subtracted: own.subtracted(e.pods),
		Shape: Shape{Pods: rv.Workload.Pods, GPUsPerPod: rv.Workload.GPUsPerPod, TotalGPUs: rv.Workload.TotalGPUs,
			Resource: rv.Workload.GPUResource, Product: rv.Workload.GPUProduct}}
	if err != nil {
		if !errors.Is(err, workload.ErrInvalid) && !errors.Is(err, workload.ErrUnsupportedKind) {
			return Result{}, fmt.Errorf("unable to audit %s %s/%s: %w", e.obj.GetKind(), e.obj.GetNamespace(), e.obj.GetName(), err)
		}
		// The webhook refuses what it cannot read (400): a denial too.
		res.Verdict = VerdictDeny
		res.Error = "mandate cannot read this workload: " + err.Error()
		return res, nil
	}
	if err := res.fill(e.obj, rv); err != nil {
		return Result{}, fmt.Errorf("%s %s/%s: %w", e.obj.GetKind(), e.obj.GetNamespace(), e.obj.GetName(), err)
	}
	return res, nil
}

// plan turns the inventory into the workloads to audit: every governed
// owner, with the pods it controls, and every pod not controlled by an
// owner in the inventory. A pod whose governed owner is missing is audited
// on its own, as the webhook decides it when the owner is gone.
func plan(inv *inventory.Inventory, o Options) ([]entry, *Report, error) {
	rep := &Report{}
	var entries []entry
	owners := map[string]int{}
	for _, obj := range inv.Owners {
		owners[ownerKey(obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), obj.GetName())] = len(entries)
		entries = append(entries, entry{obj: obj})
	}
	// gang files pod with its gang, the owner Mandate named on it (a
	// Deployment's pod, past its ReplicaSet), else its controller; or
	// says why it is audited on its own.
	// gang is the entry of the gang of the pod of meta, or -1 and why it is
	// audited on its own.
	gang := func(meta *metav1.ObjectMeta) (int, []string) {
		o := ledger.GangOwnerOf(&corev1.Pod{ObjectMeta: *meta})
		if o == nil || !workload.IsGangOwner(&metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind}) {
			return -1, nil
		}
		ref := &metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: types.UID(o.UID)}
		i, ok := owners[ownerKey(ref.APIVersion, ref.Kind, meta.Namespace, ref.Name)]
		if ok && (ref.UID == "" || entries[i].obj.GetUID() == "" || ref.UID == entries[i].obj.GetUID()) {
			return i, nil
		}
		return -1, []string{fmt.Sprintf("controlled by %s %s, which is not in the inventory: audited on its own", ref.Kind, ref.Name)}
	}
	for _, obj := range inv.Pods {
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod); err != nil {
			return nil, nil, fmt.Errorf("malformed Pod %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		if i, notes := gang(&pod.ObjectMeta); i >= 0 {
			entries[i].pods = append(entries[i].pods, pod)
		} else {
			entries = append(entries, entry{obj: obj, pods: []*corev1.Pod{pod}, notes: notes})
		}
	}
	// A pod of Facts is counted, never decided: a cluster report lists no
	// pod, each holding itself (ListCounted).
	for _, f := range inv.Facts {
		if i, _ := gang(&f.ObjectMeta); i >= 0 {
			entries[i].facts = append(entries[i].facts, f)
		} else {
			entries = append(entries, entry{facts: []*cluster.PodFacts{f}})
		}
	}
	exempt := slices.Concat(review.SystemNamespaces, o.Exempt)
	kept := entries[:0]
	var nFinished, nExempt int
	for _, e := range entries {
		if e.obj == nil {
			kept = append(kept, e)
			continue
		}
		switch ns := e.obj.GetNamespace(); {
		case slices.Contains(exempt, ns):
			nExempt++
		case o.Namespace != "" && ns != o.Namespace:
		case finished(e.obj):
			nFinished++
		case inv.CountedOnly() && livePods(e.typed()) > 0:
			// Runs or is placed: counted; a report never lists it.
		default:
			// Audited: its pods typed, as decide reads them.
			e.pods, e.facts = e.typed(), nil
			kept = append(kept, e)
			continue
		}
		// Not audited, but its pods still count.
		e.obj = nil
		kept = append(kept, e)
	}
	if nFinished > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d finished workload(s) not audited: they hold no GPUs and are never admitted again", nFinished))
	}
	if nExempt > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d workload(s) in namespaces Mandate never governs (%v) not audited", nExempt, exempt))
	}
	sort.SliceStable(kept, func(i, j int) bool { return less(kept[i].obj, kept[j].obj) })
	return kept, rep, nil
}

// ownerKey names an owner the way its pods' controller references do.
func ownerKey(apiVersion, kind, namespace, name string) string {
	return ledger.WorkloadKey(apiVersion, kind, namespace, name)
}

// less orders workloads by namespace, kind and name; entries not audited
// (nil) last.
func less(a, b *unstructured.Unstructured) bool {
	if a == nil || b == nil {
		return b == nil && a != nil
	}
	if a.GetNamespace() != b.GetNamespace() {
		return a.GetNamespace() < b.GetNamespace()
	}
	if a.GetKind() != b.GetKind() {
		return a.GetKind() < b.GetKind()
	}
	return a.GetName() < b.GetName()
}

// owned counts a workload's own pods as the state counts them: how and
// through which DRA claims.
type owned struct {
	counting topology.Counting
	claims   topology.ClaimLookup
}

// subtracted sums the GPUs the pods the ledger counts (not finished) use
// (topology.PodUsage: extended resources, KAI shares folded into whole
// GPUs, and the devices of their DRA claims, a shared claim once).
func (o owned) subtracted(pods []*corev1.Pod) Subtracted {
	s := Subtracted{GPUs: map[string]int{}}
	claims := topology.ClaimsOnce(o.claims)
	held := map[string]int{}
	for _, p := range pods {
		if podFinished(p) {
			continue
		}
		s.Pods++
		for key, n := range topology.PodUsage(p, workload.PodProduct(&p.Spec), o.counting, claims).GPUs {
			held[key] += n
		}
	}
	for res, n := range topology.Fold(held) {
		s.GPUs[res] = n
	}
	return s
}

// livePods is how many of pods the ledger counts (not finished).
func livePods(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if !podFinished(p) {
			n++
		}
	}
	return n
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// finished says whether a workload has run to its end, as its kind's
// registration says (workload.Kind.Finished): a pod that succeeded or
// failed, a Job with a true Complete or Failed condition, a JobSet with a
// true Completed one, a Volcano Job in a final phase. Finished workloads
// hold no GPUs and are never admitted again, so they are not audited.
func finished(obj *unstructured.Unstructured) bool {
	k, ok := workload.Lookup(obj.GroupVersionKind())
	return ok && k.Finished.IsFinished(obj)
}
