package webhook

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// Validator is the /validate handler. It guards namespaces' tenant label
// (see Tenancy) and, as a backstop, decides governed workloads the
// mutating webhook did not mark (it did not run, or was skipped).
type Validator struct {
	// Reviewer decides, as for Mutator.
	Reviewer *review.Service
	Tenancy  *Tenancy
	// ExemptNamespaces are admitted untouched (Mandate's own).
	ExemptNamespaces []string
	// Decisions writes a decision log line per decision; nil writes none.
	Decisions *decisionlog.Logger
	// Seal checks the directives the mutating webhook recorded for this
	// request (the Mutator's Seal); without a valid seal a workload is
	// decided, whatever directives it carries.
	Seal *Seal
}

var _ admission.Handler = (*Validator)(nil)

var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// Handle implements admission.Handler.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	if (schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}) == namespaceGVK {
		if v.Tenancy == nil {
			return observe(webhookValidate, req, start, admission.Allowed("namespaces not guarded"))
		}
		return observe(webhookValidate, req, start, v.Tenancy.Handle(ctx, req))
	}
	if req.Operation == admissionv1.Update {
		return observe(webhookValidate, req, start, v.update(ctx, req))
	}
	obj, resp, done := admit(req, v.ExemptNamespaces)
	if done {
		return observe(webhookValidate, req, start, resp)
	}
	if v.Seal.Verify(obj) {
		return observe(webhookValidate, req, start, admission.Allowed("admitted by the mutating webhook"))
	}
	// Unsealed: the mutating webhook did not see this request (its call
	// failed open, or reached another replica), or the directives were
	// written by someone else. Decide; directives on the object must be
	// the ones Mandate records for it.
	if ok, err := v.Reviewer.DaemonSetPod(ctx, obj); err != nil {
		return observe(webhookValidate, req, start, admission.Errored(http.StatusInternalServerError, err))
	} else if ok {
		return observe(webhookValidate, req, start, admission.Allowed("pod of a DaemonSet, without GPUs"))
	}
	claimed, marked := obj.GetAnnotations()[scheduler.AnnotationDirectives]
	if d, ok, err := v.Reviewer.GangDirectives(ctx, obj, requestOf(req)); err != nil {
		return observe(webhookValidate, req, start, admission.Errored(http.StatusInternalServerError, err))
	} else if ok {
		if marks, err := scheduler.Marks(d); marked && (err != nil || marks != claimed) {
			return observe(webhookValidate, req, start, forgedDirectives(req))
		}
		return observe(webhookValidate, req, start, admission.Allowed("pod of an admitted gang"))
	}
	result, err := v.Reviewer.Review(ctx, obj, requestOf(req))
	if err != nil {
		return decided(ctx, v.Decisions, webhookValidate, req, obj, start, result, err, reviewError(ctx, err))
	}
	d := result.Decision
	ctrl.LoggerFrom(ctx).Info("decided unmarked workload", "kind", req.Kind.Kind, "namespace", req.Namespace,
		"name", req.Name, "decisionID", d.ID, "allowed", d.Allowed)
	if !d.Allowed {
		return decided(ctx, v.Decisions, webhookValidate, req, obj, start, result, nil, denied(d))
	}
	if marked {
		if claimed != result.Mutated.GetAnnotations()[scheduler.AnnotationDirectives] {
			return decided(ctx, v.Decisions, webhookValidate, req, obj, start, result, nil, forgedDirectives(req))
		}
		resp = admission.Allowed("decided again: the directives it carries are the ones Mandate records")
		resp.AuditAnnotations = auditAnnotations(d)
		return decided(ctx, v.Decisions, webhookValidate, req, obj, start, result, nil, resp)
	}
	resp = admission.Allowed("")
	resp.Warnings = append(d.Warnings[:len(d.Warnings):len(d.Warnings)],
		"admitted without Mandate's scheduling directives: the mutating webhook did not run")
	resp.AuditAnnotations = auditAnnotations(d)
	return decided(ctx, v.Decisions, webhookValidate, req, obj, start, result, nil, resp)
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

// forgedDirectives denies an object whose mandate.dev/directives are not
// the ones Mandate records for it.
func forgedDirectives(req admission.Request) admission.Response {
	resp := admission.Denied(fmt.Sprintf("%s %s/%s carries %s that Mandate did not record for it: remove the annotation and create it again, "+
		"and Mandate decides and records them", req.Kind.Kind, req.Namespace, req.Name, scheduler.AnnotationDirectives))
	resp.Result.Code = http.StatusForbidden
	return resp
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
func (v *Validator) update(ctx context.Context, req admission.Request) admission.Response {
	if req.SubResource == "scale" {
		return v.scale(ctx, req)
	}
	gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	if _, governed := workload.Lookup(gvk); !governed || slices.Contains(v.ExemptNamespaces, req.Namespace) {
		return admission.Allowed("")
	}
	oldObj, err := decodeObject(req.OldObject.Raw, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	newObj, err := decodeObject(req.Object.Raw, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	return v.updateObject(ctx, req, gvk, oldObj, newObj)
}

// scale checks an UPDATE of a scalable kind's scale subresource as the
// UPDATE of the object it stands for: the stored object, and it with
// spec.replicas set to the Scale's.
func (v *Validator) scale(ctx context.Context, req admission.Request) admission.Response {
	k, governed := workload.LookupResource(req.Resource.Group, req.Resource.Resource)
	if !governed || !k.Scalable || slices.Contains(v.ExemptNamespaces, req.Namespace) {
		return admission.Allowed("")
	}
	scale, err := decodeObject(req.Object.Raw, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// Decoded from JSON: a number is a float64.
	raw, _, _ := unstructured.NestedFieldNoCopy(scale.Object, "spec", "replicas")
	n, ok := raw.(float64)
	if !ok || n != math.Trunc(n) || n < 0 || n > workload.MaxPods {
		return admission.Allowed("no replicas to scale to")
	}
	replicas := int64(n)
	oldObj, err := v.Reviewer.Stored(ctx, k.GVK, req.Namespace, req.Name)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if oldObj == nil {
		return admission.Allowed("")
	}
	newObj := oldObj.DeepCopy()
	if err := unstructured.SetNestedField(newObj.Object, replicas, "spec", "replicas"); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return v.updateObject(ctx, req, k.GVK, oldObj, newObj)
}

// updateObject is update for an object of governed kind gvk changed from
// oldObj to newObj.
func (v *Validator) updateObject(ctx context.Context, req admission.Request, gvk schema.GroupVersionKind, oldObj, newObj *unstructured.Unstructured) admission.Response {
	if _, admitted := oldObj.GetAnnotations()[scheduler.AnnotationDirectives]; !admitted {
		return admission.Allowed("not admitted by Mandate")
	}
	changed := scheduler.ChangedOwnedKeys(oldObj.GetLabels(), newObj.GetLabels(), oldObj.GetAnnotations(), newObj.GetAnnotations())
	if len(changed) > 0 {
		resp := admission.Denied(fmt.Sprintf("%s %s/%s was admitted by Mandate and %s set by the authority model's decision; "+
			"they cannot be changed afterwards: delete and create the workload again to have it decided anew",
			req.Kind.Kind, req.Namespace, req.Name, strings.Join(changed, ", ")+" are"))
		resp.Result.Code = http.StatusForbidden
		return resp
	}
	if gvk == workload.PodGVK {
		// A pod's scheduler name and priority class cannot change, and
		// its metadata keys were checked above.
		return admission.Allowed("")
	}
	terms, err := v.Reviewer.ChangedTerms(oldObj, newObj)
	if err != nil {
		return inputError(err)
	}
	if len(terms) > 0 {
		resp := admission.Denied(fmt.Sprintf("%s %s/%s was admitted by Mandate, and %s carry what the authority model's decision "+
			"tells the scheduler; they cannot be changed afterwards: delete and create the workload again to have it decided anew",
			req.Kind.Kind, req.Namespace, req.Name, strings.Join(terms, ", ")))
		resp.Result.Code = http.StatusForbidden
		return resp
	}
	raises, err := v.Reviewer.ChangeRaises(oldObj, newObj)
	if err != nil {
		return inputError(err)
	}
	if !raises {
		return admission.Allowed("")
	}
	result, err := v.Reviewer.ReviewChange(ctx, newObj, requestOf(req))
	if err != nil {
		return reviewError(ctx, err)
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
		resp := admission.Denied(fmt.Sprintf("%s %s/%s was admitted with %s; with this change the authority model decides otherwise, "+
			"which its pods cannot take on: delete and create it again with the new demand to have it decided anew",
			req.Kind.Kind, req.Namespace, req.Name, strings.Join(differ, ", ")))
		resp.Result.Code = http.StatusForbidden
		return resp
	}
	resp := admission.Allowed("the raised demand is decided as admitted before, and reserved")
	resp.Warnings = d.Warnings
	resp.AuditAnnotations = auditAnnotations(d)
	return resp
}
