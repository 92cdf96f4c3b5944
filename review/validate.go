package review

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// Validate is the validating webhook's protocol for workloads. A create
// the mutating webhook sealed (Gate.Seal) is admitted; any other is
// decided as a backstop (the mutating call failed open, reached another
// replica, or was skipped), and directives on it must be the ones Mandate
// records for it. An UPDATE of an admitted workload keeps Mandate's keys
// and terms, and a raised demand is decided (update).
func (s *Service) Validate(ctx context.Context, req Request, g Gate) Response {
	if req.Operation == string(admissionv1.Update) {
		r := s.update(ctx, req, g.ExemptNamespaces)
		r.Step = StepUpdate
		return r
	}
	obj, resp, done := admit(req, g.ExemptNamespaces)
	if done {
		return resp
	}
	if g.Seal.Verify(obj) {
		return allowed(StepSealed, "admitted by the mutating webhook")
	}
	// Unsealed: the mutating webhook did not see this request (its call
	// failed open, or reached another replica), or the directives were
	// written by someone else. Decide; directives on the object must be
	// the ones Mandate records for it.
	if ok, err := s.DaemonSetPod(ctx, obj); err != nil {
		return failed(StepDaemonSet, err)
	} else if ok {
		return allowed(StepDaemonSet, "pod of a DaemonSet, without GPUs")
	}
	claimed, marked := obj.GetAnnotations()[scheduler.AnnotationDirectives]
	if d, ok, err := s.GangDirectives(ctx, obj, req.Request); err != nil {
		return failed(StepGangPod, err)
	} else if ok {
		if marks, err := scheduler.Marks(d); marked && (err != nil || marks != claimed) {
			r := forgedDirectives(req)
			r.Step = StepGangPod
			return r
		}
		return allowed(StepGangPod, "pod of an admitted gang")
	}
	result, err := s.Review(ctx, obj, req.Request)
	decided := newDecided(obj, result, err)
	if err != nil {
		return decided.respond(reviewError(err))
	}
	d := result.Decision
	if !d.Allowed {
		return decided.respond(denied(d))
	}
	if marked {
		if claimed != result.Mutated.GetAnnotations()[scheduler.AnnotationDirectives] {
			return decided.respond(forgedDirectives(req))
		}
		r := allowed(StepDecision, "decided again: the directives it carries are the ones Mandate records")
		r.AuditAnnotations = auditAnnotations(d)
		return decided.respond(r)
	}
	return decided.respond(Response{Outcome: Allowed,
		Warnings: append(d.Warnings[:len(d.Warnings):len(d.Warnings)],
			"admitted without Mandate's scheduling directives: the mutating webhook did not run"),
		AuditAnnotations: auditAnnotations(d)})
}

// forgedDirectives denies an object whose mandate.dev/directives are not
// the ones Mandate records for it.
func forgedDirectives(req Request) Response {
	return refused(fmt.Sprintf("%s %s/%s carries %s that Mandate did not record for it: remove the annotation and create it again, "+
		"and Mandate decides and records them", req.Kind.Kind, req.Namespace, req.Name, scheduler.AnnotationDirectives))
}

// update checks an UPDATE of a workload Mandate admitted: Mandate's own
// keys (scheduler.ChangedOwnedKeys) cannot change, since they were set by
// the authority model's decision and the quota ledger, the schedulers and
// the gang controller read them (a tenant relabelling its running pods
// preemptible could otherwise free guarantee it still uses); and a change
// that raises its demand (more pods or GPUs, another class) is decided as
// its whole new demand, admitted only when the decision is the one it was
// admitted with, and reserved. Anything else an UPDATE changes is not
// Mandate's concern.
func (s *Service) update(ctx context.Context, req Request, exempt []string) Response {
	if req.SubResource == "scale" {
		return s.scale(ctx, req, exempt)
	}
	if _, governed := workload.Lookup(req.Kind); !governed || slices.Contains(exempt, req.Namespace) {
		return allowed(StepUpdate, "")
	}
	oldObj, err := decodeObject(req.OldObject, req.Namespace)
	if err != nil {
		return invalid(err)
	}
	newObj, err := decodeObject(req.Object, req.Namespace)
	if err != nil {
		return invalid(err)
	}
	return s.updateObject(ctx, req, req.Kind, oldObj, newObj)
}

// scale checks an UPDATE of a scalable kind's scale subresource as the
// UPDATE of the object it stands for: the stored object, and it with
// spec.replicas set to the Scale's.
func (s *Service) scale(ctx context.Context, req Request, exempt []string) Response {
	k, governed := workload.LookupResource(req.Resource.Group, req.Resource.Resource)
	if !governed || !k.Scalable || slices.Contains(exempt, req.Namespace) {
		return allowed(StepUpdate, "")
	}
	scale, err := decodeObject(req.Object, req.Namespace)
	if err != nil {
		return invalid(err)
	}
	// Decoded from JSON: a number is a float64.
	raw, _, _ := unstructured.NestedFieldNoCopy(scale.Object, "spec", "replicas")
	n, ok := raw.(float64)
	if !ok || n != math.Trunc(n) || n < 0 || n > workload.MaxPods {
		return allowed(StepUpdate, "no replicas to scale to")
	}
	replicas := int64(n)
	oldObj, err := s.Stored(ctx, k.GVK, req.Namespace, req.Name)
	if err != nil {
		return failed(StepUpdate, err)
	}
	if oldObj == nil {
		return allowed(StepUpdate, "")
	}
	newObj := oldObj.DeepCopy()
	if err := unstructured.SetNestedField(newObj.Object, replicas, "spec", "replicas"); err != nil {
		return failed(StepUpdate, err)
	}
	return s.updateObject(ctx, req, k.GVK, oldObj, newObj)
}

// updateObject is update for an object of governed kind gvk changed from
// oldObj to newObj.
func (s *Service) updateObject(ctx context.Context, req Request, gvk schema.GroupVersionKind, oldObj, newObj *unstructured.Unstructured) Response {
	if _, admitted := oldObj.GetAnnotations()[scheduler.AnnotationDirectives]; !admitted {
		if _, claimed := newObj.GetAnnotations()[scheduler.AnnotationDirectives]; claimed {
			// Only the mutating webhook records directives, at admission:
			// the eviction guard, the gang-whole controller and the
			// ledger trust them on a pod that was never decided (one
			// created before its namespace was governed, a DaemonSet's)
			// as on one Mandate admitted.
			return refused(fmt.Sprintf("%s %s/%s was not admitted by Mandate, and only Mandate records %s, when it admits "+
				"a workload: remove the annotation, or delete and create the workload again to have it decided",
				req.Kind.Kind, req.Namespace, req.Name, scheduler.AnnotationDirectives))
		}
		return allowed(StepUpdate, "not admitted by Mandate")
	}
	changed := scheduler.ChangedOwnedKeys(oldObj.GetLabels(), newObj.GetLabels(), oldObj.GetAnnotations(), newObj.GetAnnotations())
	if len(changed) > 0 {
		return refused(fmt.Sprintf("%s %s/%s was admitted by Mandate and %s set by the authority model's decision; "+
			"they cannot be changed afterwards: delete and create the workload again to have it decided anew",
			req.Kind.Kind, req.Namespace, req.Name, strings.Join(changed, ", ")+" are"))
	}
	if gvk == workload.PodGVK {
		// A pod's scheduler name and priority class cannot change, and
		// its metadata keys were checked above.
		return allowed(StepUpdate, "")
	}
	terms, err := s.ChangedTerms(oldObj, newObj)
	if err != nil {
		return inputError(err)
	}
	if len(terms) > 0 {
		return refused(fmt.Sprintf("%s %s/%s was admitted by Mandate, and %s carry what the authority model's decision "+
			"tells the scheduler; they cannot be changed afterwards: delete and create the workload again to have it decided anew",
			req.Kind.Kind, req.Namespace, req.Name, strings.Join(terms, ", ")))
	}
	raises, err := s.ChangeRaises(oldObj, newObj)
	if err != nil {
		return inputError(err)
	}
	if !raises {
		return allowed(StepUpdate, "")
	}
	// Decided, but not counted nor written to the decision log (Decided
	// stays nil), as before the protocol moved here.
	result, err := s.ReviewChange(ctx, oldObj, newObj, req.Request)
	if err != nil {
		return reviewError(err)
	}
	d := result.Decision
	if !d.Allowed {
		return denied(d)
	}
	was, _, err := scheduler.RecordedDirectives(oldObj.GetAnnotations())
	if err != nil {
		return inputError(err)
	}
	if differ := podTerms(was, d.Directives); len(differ) > 0 {
		return refused(fmt.Sprintf("%s %s/%s was admitted with %s; with this change the authority model decides otherwise, "+
			"which its pods cannot take on: delete and create it again with the new demand to have it decided anew",
			req.Kind.Kind, req.Namespace, req.Name, strings.Join(differ, ", ")))
	}
	r := allowed(StepUpdate, "the raised demand is decided as admitted before, and reserved")
	r.Warnings = d.Warnings
	r.AuditAnnotations = auditAnnotations(d)
	return r
}

// podTerms lists, as "what=before (now after)", the directives its pods
// carry that differ between was and now: the scheduler, queue, priority
// class, preemptibility and required topology. The gang's minimum may
// grow with the gang.
func podTerms(was, now evaluator.Directives) []string {
	var out []string
	for _, f := range []struct {
		name        string
		before, now string
	}{
		{"scheduler", was.Scheduler, now.Scheduler},
		{"queue", was.Queue, now.Queue},
		{"priority class", was.PriorityClass, now.PriorityClass},
		{"preemptible", strconv.FormatBool(was.Preemptible), strconv.FormatBool(now.Preemptible)},
		{"required topology", was.RequiredLevel, now.RequiredLevel},
	} {
		if f.before != f.now {
			out = append(out, fmt.Sprintf("%s=%s (now %s)", f.name, f.before, f.now))
		}
	}
	return out
}
