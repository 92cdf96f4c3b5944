package webhook

import (
	"context"
	"errors"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/webhook/scheduler"
	"github.com/mandate-dev/mandate/webhook/workload"
)

// AnnotationPolicyRevision names, on every admitted object Mandate
// mutates, the policy revision that admitted it.
const AnnotationPolicyRevision = "mandate.dev/policy-revision"

// ErrNoPolicy is returned while no policy revision is active (no bundle
// has activated yet).
var ErrNoPolicy = errors.New("no policy revision is active yet")

// Decider is what a Reviewer needs of the evaluator.
type Decider interface {
	Decide(ctx context.Context, in evaluator.Input) (evaluator.Decision, error)
}

var _ Decider = (*evaluator.Evaluator)(nil)

// Reviewer decides objects against the cluster state.
type Reviewer struct {
	// Decider decides when Source is nil.
	Decider Decider
	// Source, when set, is asked once per Review for the Decider to use
	// (the active bundle revision), so every decision is made by exactly
	// one revision however often it is swapped; nil when none is active.
	Source func() Decider
	State  *cluster.State
	// Namespaces, when set, reads a namespace the state has not seen yet
	// (created a moment ago, or the informers are re-listing after the API
	// server was away), so its pods are not taken for a tenant-less
	// namespace's. The manager's API reader satisfies it.
	Namespaces OwnerReader
	// Shadow, when set, is asked once per Review for a candidate
	// revision's Decider (nil when none is active). It decides the same
	// input as the active revision, after it and outside the tenant tree's
	// lock; its decision is only compared and reported (Review.Shadow,
	// metrics), never enforced, and its errors never fail a review.
	Shadow func() Decider
	// Explain adds per-dimension explanations to every decision (for
	// people, e.g. mandate eval); admissions leave it off.
	Explain bool
}

// Review is the outcome for one object.
type Review struct {
	Workload workload.Workload
	Decision evaluator.Decision
	// Patch turns the submitted object into the mutated one; empty when
	// denied or when nothing needs to change.
	Patch []jsonpatch.JsonPatchOperation
	// Mutated is the object as it would be stored; nil when denied.
	Mutated *unstructured.Unstructured
	// Shadow is what the shadow (candidate) revision decided about the
	// same input, never enforced; nil without a shadow revision.
	Shadow *Shadow
}

// Shadow is a candidate revision's decision beside the active one.
type Shadow struct {
	Revision string
	Decision evaluator.Decision
	// Differences say, one per entry, how the candidate's decision differs
	// from the active one ("allowed: true -> false", "directives.queue:
	// research -> research-llm"); empty when they agree.
	Differences []string
}

// Review normalises, decides and, when admitted, mutates a copy of obj. A
// namespace-less object is taken to be in "default". With a shadow
// revision active, Review.Shadow says what it would have decided.
func (r *Reviewer) Review(ctx context.Context, obj *unstructured.Unstructured, req evaluator.Request) (Review, error) {
	out, in, err := r.review(ctx, obj, req)
	if r.Shadow == nil || err != nil {
		return out, err
	}
	if shadow := r.Shadow(); shadow != nil {
		out.Shadow = decideShadow(ctx, shadow, in, out.Decision)
	}
	return out, nil
}

// review decides with the active revision and returns the input it
// decided, so that a shadow revision sees exactly the same.
func (r *Reviewer) review(ctx context.Context, obj *unstructured.Unstructured, req evaluator.Request) (Review, evaluator.Input, error) {
	// Decided as submitted: without the keys an earlier decision of Mandate
	// wrote (the API server reinvokes /mutate when an in-tree plugin changes
	// the object Mandate mutated, e.g. Priority setting spec.priority).
	submitted := scheduler.WithoutOwnMarks(obj)
	w, err := workload.Normalize(submitted)
	if err != nil {
		return Review{}, evaluator.Input{}, err
	}
	if w.Namespace == "" {
		w.Namespace = "default"
	}
	ns, err := r.namespace(ctx, w.Namespace)
	if err != nil {
		return Review{}, evaluator.Input{}, err
	}
	w.Tenant = ns.Labels[ledger.LabelTenant]
	// Reading usage, deciding and reserving happen under the tenant tree's
	// lock, so concurrent admissions never both spend the same quota.
	if w.Tenant != "" {
		defer r.State.LockTenantTree(w.Tenant)()
	}
	// A workload decided again holds a reservation from its first decision;
	// its own GPUs must not count against it twice.
	if key := reservationKey(w); key != "" && !req.DryRun {
		r.State.Release(key)
	}
	decider := r.Decider
	if r.Source != nil {
		decider = r.Source()
	}
	if decider == nil {
		return Review{}, evaluator.Input{}, fmt.Errorf("unable to decide %s %s/%s: %w", w.Kind, w.Namespace, w.Name, ErrNoPolicy)
	}
	in := evaluator.Input{
		Request:   req,
		Namespace: ns,
		Workload:  w,
		Usage:     r.State.Usage(w.Tenant),
		Object:    submitted.Object,
		Cluster:   r.State.Snapshot(),
		Explain:   r.Explain,
	}
	d, err := decider.Decide(ctx, in)
	if err != nil {
		return Review{}, in, fmt.Errorf("unable to decide %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	out := Review{Workload: w, Decision: d}
	if !d.Allowed {
		return out, in, nil
	}
	r.reserve(w, d, req.DryRun)
	mutated, err := scheduler.Render(obj, w, d.Directives)
	if err != nil {
		return Review{}, in, fmt.Errorf("%s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	if d.Revision != "" {
		// After the adapter, so its output (and golden files) stay as they are.
		annotations := mutated.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[AnnotationPolicyRevision] = d.Revision
		mutated.SetAnnotations(annotations)
	}
	if out.Patch, err = scheduler.Patch(obj, mutated); err != nil {
		return Review{}, in, err
	}
	out.Mutated = mutated
	return out, in, nil
}

// reserve counts an admitted workload's GPUs until the informers see its
// pods. Dry runs reserve nothing; nor do objects still without a name
// (generateName), which the informers count once they exist.
func (r *Reviewer) reserve(w workload.Workload, d evaluator.Decision, dryRun bool) {
	if dryRun || w.Name == "" || w.TotalGPUs == 0 || w.GPUResource == "" {
		return
	}
	r.State.Reserve(reservationKey(w), w.Tenant, map[string]int{w.GPUResource: w.TotalGPUs}, d.Directives.Preemptible)
}

// reservationKey is the ledger key of w's reservation; "" for objects
// without a name yet.
func reservationKey(w workload.Workload) string {
	if w.Name == "" {
		return ""
	}
	return ledger.WorkloadKey(w.APIVersion, w.Kind, w.Namespace, w.Name)
}

// namespace is the state's view of a namespace or, when the state has not
// seen it and Namespaces is set, the API server's.
func (r *Reviewer) namespace(ctx context.Context, name string) (evaluator.Namespace, error) {
	ns, known := r.State.LookupNamespace(name)
	if known || r.Namespaces == nil {
		return ns, nil
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultOwnerTimeout)
	defer cancel()
	obj := &corev1.Namespace{}
	if err := r.Namespaces.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ns, nil
		}
		return ns, fmt.Errorf("unable to read namespace %s, not yet in the cluster state: %w", name, err)
	}
	return evaluator.Namespace{Name: name, Labels: obj.Labels}, nil
}
