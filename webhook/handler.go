package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Audit annotation keys of every decided workload's response. The API
// server prefixes each with the webhook's name, so its audit log records
// e.g. "mutate.mandate.dev/decision-id"; it drops a key that already has a
// prefix (a qualified name allows one "/").
const (
	AuditDecisionID     = "decision-id"
	AuditPolicyRevision = "policy-revision"
	// AuditDryRunViolations lists, comma-separated, the codes of the
	// dryrun-stage violations of an admitted workload: what it would have
	// been denied for.
	AuditDryRunViolations = "dryrun-violations"
)

// Mutator is the /mutate handler: it decides governed workloads on CREATE
// and patches in the directives of the tenant's scheduler.
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
	Seal *Seal
}

var _ admission.Handler = (*Mutator)(nil)

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	// Built when a line is written, not on every request.
	log := func() logr.Logger {
		return ctrl.LoggerFrom(ctx).WithValues("kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
	}
	obj, resp, done := admit(req, m.ExemptNamespaces)
	if done {
		return observe(webhookMutate, req, start, resp)
	}
	if ok, err := m.Reviewer.DaemonSetPod(ctx, obj); err != nil {
		log().Error(err, "unable to read the pod's DaemonSet")
		return observe(webhookMutate, req, start, admission.Errored(http.StatusInternalServerError, err))
	} else if ok {
		return observe(webhookMutate, req, start, admission.Allowed("pod of a DaemonSet, without GPUs"))
	}
	if d, ok, err := m.Reviewer.GangDirectives(ctx, obj, requestOf(req)); err != nil {
		log().Error(err, "unable to read the pod's owner")
		return observe(webhookMutate, req, start, admission.Errored(http.StatusInternalServerError, err))
	} else if ok {
		// Not a decision: the gang was decided when its owner was admitted.
		resp := applyGang(obj, d, requestOf(req), m.Seal)
		if debug := ctrl.LoggerFrom(ctx).V(1); debug.Enabled() {
			log().V(1).Info("pod of an admitted gang", "allowed", resp.Allowed)
		}
		return observe(webhookMutate, req, start, resp)
	}
	result, err := m.Reviewer.Review(ctx, obj, requestOf(req))
	if err != nil {
		return decided(ctx, m.Decisions, webhookMutate, req, obj, start, result, err, reviewError(ctx, err))
	}
	d := result.Decision
	if debug := ctrl.LoggerFrom(ctx).V(1); debug.Enabled() {
		log().V(1).Info("decided", "decisionID", d.ID, "allowed", d.Allowed, "revision", d.Revision)
	}
	if !d.Allowed {
		return decided(ctx, m.Decisions, webhookMutate, req, obj, start, result, nil, denied(d))
	}
	resp = patched("", append(result.Patch, m.Seal.patch(result.Mutated)...))
	// Warn-stage violations are among the warnings; dryrun-stage ones are
	// only recorded, in the audit annotations.
	resp.Warnings = d.Warnings
	resp.AuditAnnotations = auditAnnotations(d)
	return decided(ctx, m.Decisions, webhookMutate, req, obj, start, result, nil, resp)
}

// auditAnnotations are what the API server's audit event of a decided
// request records: the decision, the revision that made it and, when a
// rule is staged as dryrun, the codes it would have denied for.
func auditAnnotations(d evaluator.Decision) map[string]string {
	a := map[string]string{AuditDecisionID: d.ID, AuditPolicyRevision: d.Revision}
	if len(d.DryRun) > 0 {
		codes := make([]string, len(d.DryRun))
		for i, v := range d.DryRun {
			codes[i] = v.Code
		}
		a[AuditDryRunViolations] = strings.Join(codes, ",")
	}
	return a
}

// admit does what both workload handlers do first: only CREATEs of
// governed kinds outside exempt namespaces are decided. It returns the
// decoded object, or the response when there is nothing to decide.
func admit(req admission.Request, exempt []string) (*unstructured.Unstructured, admission.Response, bool) {
	gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	if _, governed := workload.Lookup(gvk); !governed {
		return nil, admission.Allowed("not governed"), true
	}
	if req.Operation != admissionv1.Create {
		return nil, admission.Allowed("only creates are decided"), true
	}
	if slices.Contains(exempt, req.Namespace) {
		return nil, admission.Allowed("namespace exempt"), true
	}
	obj, err := decodeObject(req.Object.Raw, req.Namespace)
	if err != nil {
		return nil, admission.Errored(http.StatusBadRequest, err), true
	}
	if obj.GroupVersionKind() != gvk {
		return nil, admission.Errored(http.StatusBadRequest,
			fmt.Errorf("%w: the request is for a %s but the object is a %s", workload.ErrInvalid, gvk, obj.GroupVersionKind())), true
	}
	return obj, admission.Response{}, false
}

// decodeObject decodes a request's object; a namespace-less object takes
// the request's namespace.
func decodeObject(raw []byte, namespace string) (*unstructured.Unstructured, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: the request carries no object", workload.ErrInvalid)
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: the object is not a JSON object: %v", workload.ErrInvalid, err)
	}
	obj := &unstructured.Unstructured{Object: m}
	if obj.GetNamespace() == "" && namespace != "" {
		obj.SetNamespace(namespace)
	}
	return obj, nil
}

func requestOf(req admission.Request) evaluator.Request {
	return evaluator.Request{
		Operation: string(req.Operation),
		User:      req.UserInfo.Username,
		Groups:    req.UserInfo.Groups,
		DryRun:    req.DryRun != nil && *req.DryRun,
		UID:       string(req.UID),
	}
}

// applyGang admits a pod of an admitted gang with the directives its owner
// was admitted with: never re-decided, so never counted twice nor denied
// on its own.
func applyGang(obj *unstructured.Unstructured, d evaluator.Directives, req evaluator.Request, seal *Seal) admission.Response {
	mutated, patch, err := review.RenderGang(obj, d, req)
	if errors.Is(err, workload.ErrInvalid) || errors.Is(err, workload.ErrUnsupportedKind) {
		return inputError(err)
	}
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return patched("pod of an admitted gang", append(patch, seal.patch(mutated)...))
}

// patched allows with ops as the response's JSON patch, encoded here
// (scheduler.EncodePatch) rather than by controller-runtime through
// reflection (admission.Patched).
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

// reviewError classifies an error from Review: bad input is the client's
// (400), anything else Mandate's (500).
func reviewError(ctx context.Context, err error) admission.Response {
	if errors.Is(err, workload.ErrInvalid) || errors.Is(err, workload.ErrUnsupportedKind) {
		return inputError(err)
	}
	ctrl.LoggerFrom(ctx).Error(err, "unable to decide")
	return admission.Errored(http.StatusInternalServerError, fmt.Errorf("mandate could not decide: %w", err))
}

func inputError(err error) admission.Response {
	return admission.Errored(http.StatusBadRequest, fmt.Errorf("mandate cannot read this workload: %w", err))
}

// denied turns a negative decision into a 403 whose message is every
// violation's, whose reason names the dimensions and whose causes list the
// violations one by one.
func denied(d evaluator.Decision) admission.Response {
	msgs := make([]string, 0, len(d.Violations))
	var dims []string
	causes := make([]metav1.StatusCause, 0, len(d.Violations))
	for _, v := range d.Violations {
		msgs = append(msgs, v.Message)
		if !slices.Contains(dims, string(v.Dimension)) {
			dims = append(dims, string(v.Dimension))
		}
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(v.Dimension), Message: v.Message, Field: v.Code})
	}
	msg := strings.Join(msgs, "; ")
	if msg == "" {
		msg = "denied by the authority model"
	}
	resp := admission.Denied(msg)
	resp.Result.Code = http.StatusForbidden
	resp.Result.Reason = metav1.StatusReason("denied by the authority model (" + strings.Join(dims, ", ") + ")")
	resp.Result.Details = &metav1.StatusDetails{Causes: causes}
	resp.AuditAnnotations = auditAnnotations(d)
	return resp
}
