package webhook

import (
	"context"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
)

// Audit annotation keys of every decided workload's response (defined by
// the decision service, which sets them: review.AuditDecisionID).
const (
	AuditDecisionID       = review.AuditDecisionID
	AuditPolicyRevision   = review.AuditPolicyRevision
	AuditDryRunViolations = review.AuditDryRunViolations
)

// Mutator is the /mutate handler: the decision service's Admit decides
// governed workloads on CREATE and patches in the directives of the
// tenant's scheduler.
type Mutator struct {
	// Reviewer decides; its Owners reader recognises pods of admitted
	// gangs.
	Reviewer *review.Service
	// ExemptNamespaces are admitted untouched (Mandate's own).
	ExemptNamespaces []string
	// Decisions writes a decision log line per decision; nil writes none.
	Decisions *decisionlog.Logger
	// Seal seals the directives it records for the validating webhook;
	// nil seals none (the validating webhook then decides again).
	Seal *review.Seal
}

var _ admission.Handler = (*Mutator)(nil)

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	r := m.Reviewer.Admit(ctx, requestOf(req), review.Gate{ExemptNamespaces: m.ExemptNamespaces, Seal: m.Seal})
	if debug := ctrl.LoggerFrom(ctx).V(1); debug.Enabled() {
		switch {
		case r.Step == review.StepGangPod && r.Outcome != review.Failed:
			logFor(ctx, req).V(1).Info("pod of an admitted gang", "allowed", r.Outcome == review.Allowed)
		case r.Decided != nil && r.Decided.Err == nil:
			d := r.Decided.Result.Decision
			logFor(ctx, req).V(1).Info("decided", "decisionID", d.ID, "allowed", d.Allowed, "revision", d.Revision)
		}
	}
	return respond(ctx, m.Decisions, webhookMutate, req, start, r)
}

// logFor is the logger of a request's lines, built when a line is
// written, not on every request.
func logFor(ctx context.Context, req admission.Request) logr.Logger {
	return ctrl.LoggerFrom(ctx).WithValues("kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
}

// requestOf is the decision service's request of an AdmissionReview's.
func requestOf(req admission.Request) review.Request {
	return review.Request{
		Request: evaluator.Request{
			Operation: string(req.Operation),
			User:      req.UserInfo.Username,
			Groups:    req.UserInfo.Groups,
			DryRun:    req.DryRun != nil && *req.DryRun,
			UID:       string(req.UID),
		},
		Kind:        schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind},
		Resource:    schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource},
		SubResource: req.SubResource,
		Namespace:   req.Namespace,
		Name:        req.Name,
		Object:      req.Object.Raw,
		OldObject:   req.OldObject.Raw,
	}
}

// respond translates the decision service's answer into an
// AdmissionResponse, logs a failure, and records the request (decided).
func respond(ctx context.Context, log *decisionlog.Logger, webhook string, req admission.Request, start time.Time, r review.Response) admission.Response {
	if r.Outcome == review.Failed {
		logFor(ctx, req).Error(r.Err, failure(r.Step))
	}
	resp := response(r)
	if r.Decided == nil {
		return observe(webhook, req, start, resp)
	}
	return decided(ctx, log, webhook, req, start, r.Decided, resp)
}

// failure is the log message of a request that failed at step.
func failure(step review.Step) string {
	switch step {
	case review.StepDaemonSet:
		return "unable to read the pod's DaemonSet"
	case review.StepGangPod:
		return "unable to read the pod's owner"
	}
	return "unable to decide"
}

// response is the AdmissionResponse of r.
func response(r review.Response) admission.Response {
	var resp admission.Response
	switch r.Outcome {
	case review.Allowed:
		resp = patched(r.Message, r.Patch)
	case review.Denied:
		resp = admission.Denied(r.Message)
		if r.Reason != "" {
			// A decision's denial: its reason names the dimensions, its
			// causes list the violations one by one.
			resp.Result.Reason = metav1.StatusReason(r.Reason)
			causes := make([]metav1.StatusCause, 0, len(r.Violations))
			for _, v := range r.Violations {
				causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(v.Dimension), Message: v.Message, Field: v.Code})
			}
			resp.Result.Details = &metav1.StatusDetails{Causes: causes}
		}
	case review.Invalid:
		resp = admission.Errored(http.StatusBadRequest, r.Err)
	default:
		resp = admission.Errored(http.StatusInternalServerError, r.Err)
	}
	resp.Warnings = r.Warnings
	resp.AuditAnnotations = r.AuditAnnotations
	return resp
}

// patched allows with ops as the response's JSON patch, encoded here
// (scheduler.EncodePatch) rather than by controller-runtime through
// reflection (admission.Patched) or by diffing the object encoded again
// (admission.PatchResponseFromRaw): the decision service computed the
// operations from the decoded objects.
func patched(message string, ops []jsonpatch.JsonPatchOperation) admission.Response {
	resp := admission.Allowed(message)
	if len(ops) == 0 {
		return resp
	}
	raw, err := scheduler.EncodePatch(ops)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	patchType := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = raw, &patchType
	return resp
}
