// Package review is Mandate's decision service: the one place a workload is
// decided, whoever asks. It normalises an object to a Workload, resolves the
// tenant from the namespace, runs the quota transaction against the cluster
// state (read usage, decide, reserve: cluster.State.Decide), renders the
// decision's directives for the tenant's scheduler and computes the patch.
// With a shadow revision it decides the same input again and reports the
// differences. It also runs the admission protocol around a decision
// (Admit, Validate: what is decided at all, DaemonSet pods, pods of admitted
// gangs, the seal between the two webhooks, the rules of an UPDATE), with
// request and response types of its own. The admission webhooks (package
// webhook), `mandate eval`, `mandate audit` and the demo are its callers;
// it knows nothing of AdmissionReview.
package review

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// AnnotationPolicyRevision names, on every admitted object Mandate
// mutates, the policy revision that admitted it.
const AnnotationPolicyRevision = "mandate.dev/policy-revision"

// DefaultReadTimeout bounds one uncached read of a namespace or a pod's
// owner; it must stay well under the webhook's timeoutSeconds.
const DefaultReadTimeout = time.Second

// SystemNamespaces are never governed: the control plane's own.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// ErrNoPolicy is returned while no policy revision is active (no bundle
// has activated yet).
var ErrNoPolicy = errors.New("no policy revision is active yet")

// Decider is what the service needs of the evaluator.
type Decider interface {
	Decide(ctx context.Context, in evaluator.Input) (evaluator.Decision, error)
}

var _ Decider = (*evaluator.Evaluator)(nil)

// Reader reads one object from the API server, uncached (it was created a
// moment ago and a cache may not have seen it yet). The manager's API
// reader satisfies it; tests fake it.
type Reader interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

var _ Reader = client.Reader(nil)

// Service decides objects against the cluster state.
type Service struct {
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
	// namespace's.
	Namespaces Reader
	// Owners, when set, reads pods' owners to recognise pods of admitted
	// gangs (GangDirectives); nil decides every pod on its own.
	Owners Reader
	// OwnerCache, when set, is read before Owners: an informer's copy, so
	// the pods of a large gang do not each cost an API round trip. Owners
	// answers what the cache has not seen yet (an owner created a moment
	// ago) or holds under another UID (deleted and created again).
	OwnerCache Reader
	// Claims, when set, reads the DRA ResourceClaims and
	// ResourceClaimTemplates pods reference, to count their GPUs (a cached
	// client in serve); nil leaves them uncounted, with a warning.
	Claims Reader
	// ReadTimeout bounds one read of Namespaces, Owners or Claims;
	// DefaultReadTimeout when zero.
	ReadTimeout time.Duration
	// Shadow, when set, is asked once per Review for a candidate
	// revision's Decider (nil when none is active). It decides the same
	// input as the active revision, after it and outside the quota
	// transaction; its decision is only compared and reported
	// (Result.Shadow, metrics), never enforced, and its errors never fail a
	// review.
	Shadow func() Decider
	// Explain adds per-dimension explanations to every decision (for
	// people, e.g. mandate eval); admissions leave it off.
	Explain bool
	// SchedulerObjects, when set, says which queues and topologies the
	// cluster carries, so that a decision naming one it lacks warns
	// (schedulerWarnings); nil says nothing of them (offline callers).
	SchedulerObjects SchedulerObjects
}

// Result is the outcome for one object.
type Result struct {
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

// Review normalises, decides and, when admitted, mutates a copy of obj. A
// namespace-less object is taken to be in "default". With a shadow
// revision active, Result.Shadow says what it would have decided.
func (s *Service) Review(ctx context.Context, obj *unstructured.Unstructured, req evaluator.Request) (Result, error) {
	out, in, err := s.review(ctx, obj, req, "", 0)
	if err != nil {
		return out, err
	}
	if s.Shadow != nil {
		if shadow := s.Shadow(); shadow != nil {
			out.Shadow = decideShadow(ctx, shadow, in, out.Decision)
		}
	}
	// After the shadow comparison: these warnings are the cluster's, not
	// either revision's.
	out.Decision.Warnings = append(out.Decision.Warnings, s.schedulerWarnings(out.Workload, out.Decision)...)
	return out, nil
}

// review decides with the active revision and returns the input it
// decided, so that a shadow revision sees exactly the same.
// exclude and generation are a change's (ReviewChange): the owner UID
// whose pods the view leaves out, and the generation of the stored object
// its reservation is for; "" and 0 for a create.
func (s *Service) review(ctx context.Context, obj *unstructured.Unstructured, req evaluator.Request, exclude string, generation int64) (Result, evaluator.Input, error) {
	w, err := s.normalize(obj)
	if err != nil {
		return Result{}, evaluator.Input{}, err
	}
	ns, err := s.namespace(ctx, w.Namespace)
	if err != nil {
		return Result{}, evaluator.Input{}, err
	}
	w.Tenant = ns.Labels[workload.LabelTenant]
	decider := s.Decider
	if s.Source != nil {
		decider = s.Source()
	}
	if decider == nil {
		return Result{}, evaluator.Input{}, fmt.Errorf("unable to decide %s %s/%s: %w", w.Kind, w.Namespace, w.Name, ErrNoPolicy)
	}
	// A gpu-memory workload counts its memory's share of a device.
	w.Notes = append(w.Notes, mapGPUMemory(&w, modelOf(decider))...)
	var claimWarnings []string
	if len(w.Claims) > 0 {
		if claimWarnings, err = s.resolveClaims(ctx, &w, modelOf(decider)); err != nil {
			return Result{}, evaluator.Input{}, fmt.Errorf("%s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
		}
	}
	in := evaluator.Input{Request: req, Namespace: ns, Workload: w, Object: obj.Object, Explain: s.Explain}
	var d evaluator.Decision
	var reserved cluster.Reservation
	key := reservationKey(w, req)
	if generation > 0 && key != "" && w.Name != "" {
		// A change of a stored workload: its reservation is the hold's
		// key, whatever request key it was created under, so that it
		// counts instead of the hold until the stored object shows it.
		key = ledger.WorkloadKey(w.APIVersion, w.Kind, w.Namespace, w.Name)
	}
	// The quota transaction: concurrent admissions never both spend the
	// same quota. The decision runs outside the tenant tree's lock; its
	// commit re-checks the quota limits it relied on and calls this again
	// when a concurrent reservation flipped one. Rendering and patching
	// come after it.
	err = s.State.DecideExcluding(ctx, w.Tenant, key, exclude, func(v cluster.View) (cluster.Reservation, error) {
		in.Usage, in.Cluster = v.Usage, v.Cluster
		var err error
		if d, err = decideBounded(ctx, decider, in); err != nil {
			return cluster.Reservation{}, err
		}
		d = scheduler.RefuseUnrenderable(w, d)
		if len(claimWarnings) > 0 {
			d.Warnings = append(append([]string(nil), d.Warnings...), claimWarnings...)
		}
		reserved = reservation(w, d, req.DryRun)
		reserved.Relied, reserved.ReliedKnown = d.Relied, d.ReliedKnown
		reserved.WantsGuarantee = wantsGuarantee(d)
		reserved.Generation = generation
		return reserved, nil
	})
	if err != nil {
		return Result{}, in, fmt.Errorf("unable to decide %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	if len(w.Notes) > 0 {
		// What the normaliser assumed, said to whoever submitted it.
		d.Warnings = append(slices.Clone(d.Warnings), w.Notes...)
	}
	out := Result{Workload: w, Decision: d}
	if !d.Allowed {
		return out, in, nil
	}
	mutated, err := scheduler.Render(obj, w, d.Directives)
	if err != nil {
		return Result{}, in, fmt.Errorf("%s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	// An object reserved under a request key (admitted without a name)
	// carries it to its pods; any other object carries none.
	mark := ""
	if ledger.IsRequestKey(w.Namespace, key) && len(reserved.GPUs) > 0 {
		mark = key
	}
	if err := scheduler.MarkReservation(mutated, w, mark); err != nil {
		return Result{}, in, fmt.Errorf("%s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	dropGangOwner(mutated)
	if scheduler.OwnsQuota(d.Directives.Scheduler) && req.Operation == string(admissionv1.Create) {
		// A scheduler with its own quota (Kueue) admits by unsuspending; it
		// is not asked again once the queue label is on
		// (scheduler.HoldForKueue).
		if _, err := scheduler.HoldForKueue(mutated); err != nil {
			return Result{}, in, err
		}
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
		return Result{}, in, err
	}
	out.Mutated = mutated
	return out, in, nil
}

// dropGangOwner removes a gang-owner annotation from an object decided on
// its own: it belongs to no other gang, so the annotation is its creator's,
// not Mandate's (which writes it only on a gang's pods, GangDirectives),
// and the ledger must not count the object among that gang's pods
// (ledger.GangOwnerOf).
// It runs on every admitted decision: it reads the annotations in place
// (GetAnnotations would copy them each time).
func dropGangOwner(obj *unstructured.Unstructured) {
	unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", workload.AnnotationGangOwner)
}

// ChangeRaises says whether an UPDATE of an admitted workload raises what
// was decided: more pods, GPUs or GPUs per pod, another GPU resource,
// product or priority class, or a suspended workload let run (a Job
// unsuspended holds its GPUs again, so they are decided against the
// quota as it is now). Lowering a demand needs no decision: its pods free
// the quota as they end.
func (s *Service) ChangeRaises(old, cur *unstructured.Unstructured) (bool, error) {
	ow, err := s.normalize(old)
	if err != nil {
		return false, err
	}
	nw, err := s.normalize(cur)
	if err != nil {
		return false, err
	}
	k, _ := workload.Lookup(cur.GroupVersionKind())
	unsuspended := suspended(k, old) && !suspended(k, cur)
	if was, ok, err := scheduler.RecordedDirectives(old.GetAnnotations()); err == nil && ok && scheduler.OwnsQuota(was.Scheduler) {
		// A queueing system that owns its quota (Kueue) admits by
		// unsuspending: that is its decision to make, not a raise.
		unsuspended = false
	}
	return nw.Pods > ow.Pods || nw.TotalGPUs > ow.TotalGPUs || nw.GPUsPerPod > ow.GPUsPerPod ||
		nw.GPUResource != ow.GPUResource || nw.GPUProduct != ow.GPUProduct || nw.PriorityClass != ow.PriorityClass ||
		unsuspended, nil
}

// ChangedTerms lists the fields of cur, a new version of a workload
// Mandate admitted, where it no longer carries what the directives
// recorded on old tell its scheduler (as JSON pointers): a queue, scheduler
// name, priority class, preemptibility or gang key edited in a pod template
// or in the kind's own spec (a Volcano Job's spec.queue), which the
// metadata check (scheduler.ChangedOwnedKeys) does not see. The adapters
// define what they set, so the recorded directives rendered onto cur must
// change nothing, except where they would change old too: a field a newer
// Mandate renders (a Volcano gang's pod affinity) that an object admitted
// by an older one never had is not the client's edit.
func (s *Service) ChangedTerms(old, cur *unstructured.Unstructured) ([]string, error) {
	was, ok, err := scheduler.RecordedDirectives(old.GetAnnotations())
	if err != nil || !ok {
		return nil, err
	}
	w, err := s.normalize(cur)
	if err != nil {
		return nil, err
	}
	rendered, err := scheduler.Render(cur, w, was)
	if err != nil {
		return nil, fmt.Errorf("unable to render the recorded directives onto the update: %w", err)
	}
	ops, err := scheduler.Patch(cur, rendered)
	if err != nil {
		return nil, err
	}
	before := map[string]bool{}
	if ow, err := s.normalize(old); err == nil {
		if again, err := scheduler.Render(old, ow, was); err == nil {
			oldOps, err := scheduler.Patch(old, again)
			if err != nil {
				return nil, err
			}
			for _, op := range oldOps {
				before[op.Path] = true
			}
		}
	}
	paths := make([]string, 0, len(ops))
	for _, op := range ops {
		if !before[op.Path] {
			paths = append(paths, op.Path)
		}
	}
	return paths, nil
}

// ReviewChange decides cur, the new version of an admitted workload old
// whose change raises its demand (ChangeRaises), as a create of its whole
// new demand in a view without its own pods and hold, and reserves it
// under its key (its pods consume the reservation) until the stored
// object shows the change (its next generation), when its hold counts it.
func (s *Service) ReviewChange(ctx context.Context, old, cur *unstructured.Unstructured, req evaluator.Request) (Result, error) {
	out, _, err := s.review(ctx, cur, req, string(cur.GetUID()), generationOf(old)+1)
	if err != nil {
		return out, err
	}
	out.Decision.Warnings = append(out.Decision.Warnings, s.schedulerWarnings(out.Workload, out.Decision)...)
	return out, nil
}

// normalize is the workload as submitted. A preemptibility key or a
// scheduler key (queue, gang minimum) that only repeats what Mandate recorded when it admitted the object (the API
// server reinvoking /mutate after an in-tree plugin changed the object,
// or an audit of stored objects) is Mandate's own mark, not the tenant
// asking: it is not read as a request.
func (s *Service) normalize(obj *unstructured.Unstructured) (workload.Workload, error) {
	w, err := workload.Normalize(obj)
	if err != nil {
		return w, err
	}
	if w.Namespace == "" {
		w.Namespace = "default"
	}
	recorded, ok, err := scheduler.RecordedDirectives(obj.GetAnnotations())
	if err != nil || !ok {
		return w, nil
	}
	if recorded.Tier != "" && w.PriorityClass == model.BorrowedClass(recorded.Tier) {
		// The borrowed class Mandate gave work beyond a guarantee is its
		// mark, not a class asked: the work asked for its tier.
		w.PriorityClass = recorded.Tier
	}
	if w.RequestedPreemptible != nil && recorded.Preemptible == *w.RequestedPreemptible {
		w.RequestedPreemptible, w.RequestedPreemptibleBy = nil, ""
	}
	w.SchedulerKeys = scheduler.UnrecordedKeys(w.SchedulerKeys, recorded)
	return w, nil
}

// reservation is what an admitted workload's GPUs hold until the informers
// see its pods (or, for a workload of a kind that holds, its stored
// object: HoldOf). Dry runs reserve nothing, nor do the preemptible
// workloads of a scheduler that owns its quota (Kueue's: holdsQueued).
func reservation(w workload.Workload, d evaluator.Decision, dryRun bool) cluster.Reservation {
	if !d.Allowed || dryRun {
		return cluster.Reservation{}
	}
	if scheduler.OwnsQuota(d.Directives.Scheduler) && d.Directives.Preemptible {
		// Borrowed work on Kueue (a scheduler that owns its quota) waits
		// suspended until its ClusterQueue may borrow: that quota is
		// Kueue's, so Mandate reserves nothing and counts the pods once
		// Kueue lets them run. A non-preemptible one was granted the
		// tenant's guarantee now, and reserves it, queued or not.
		return cluster.Reservation{}
	}
	gpus := demandOf(w)
	if len(gpus) == 0 {
		return cluster.Reservation{}
	}
	return cluster.Reservation{GPUs: gpus, Preemptible: d.Directives.Preemptible}
}

// wantsGuarantee says whether d is of work that asked to run within its
// tenant's guarantee: admitted non-preemptible, admitted at its tier's
// borrowed class, or denied for going over a guarantee.
func wantsGuarantee(d evaluator.Decision) bool {
	if d.Allowed {
		return !d.Directives.Preemptible || d.Directives.Tier != ""
	}
	return slices.ContainsFunc(d.Violations, func(v evaluator.Violation) bool { return v.Code == "QUOTA_OVER_GUARANTEE" })
}

// reservationKey is the ledger key of w's reservation: its name's, or, for
// an object without a name yet (generateName: every Deployment, ReplicaSet
// and Job pod), the request's (ledger.RequestKey), which its pods carry
// (MarkReservation); "" for dry runs and for requests without a uid,
// which hold none.
func reservationKey(w workload.Workload, req evaluator.Request) string {
	if req.DryRun {
		return ""
	}
	return podKey(w, req)
}

// namespace is the state's view of a namespace or, when the state has not
// seen it and Namespaces is set, the API server's.
func (s *Service) namespace(ctx context.Context, name string) (workload.Namespace, error) {
	ns, known := s.State.LookupNamespace(name)
	if known || s.Namespaces == nil {
		return ns, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout())
	defer cancel()
	obj := &corev1.Namespace{}
	if err := s.Namespaces.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ns, nil
		}
		return ns, fmt.Errorf("unable to read namespace %s, not yet in the cluster state: %w", name, err)
	}
	return workload.Namespace{Name: name, Labels: obj.Labels}, nil
}

func (s *Service) readTimeout() time.Duration {
	if s.ReadTimeout > 0 {
		return s.ReadTimeout
	}
	return DefaultReadTimeout
}

// generationOf is obj's metadata.generation, whether it was decoded by
// apimachinery (an int64) or straight from a review's JSON (a float64,
// which Unstructured.GetGeneration reads as 0).
func generationOf(obj *unstructured.Unstructured) int64 {
	meta, _ := obj.Object["metadata"].(map[string]any)
	switch g := meta["generation"].(type) {
	case int64:
		return g
	case float64:
		return int64(g)
	}
	return 0
}
