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

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/webhook/scheduler"
	"github.com/mandate-dev/mandate/webhook/workload"
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

// DefaultOwnerTimeout bounds the uncached read of a pod's owner; it must
// stay well under the webhook's timeoutSeconds.
const DefaultOwnerTimeout = time.Second

var (
	podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

	// governedKinds are the workload kinds the webhooks decide.
	governedKinds = append([]schema.GroupVersionKind{podGVK}, workload.GangOwnerKinds...)
)

// OwnerReader reads a pod's owner, uncached (the owner was admitted
// moments ago and a cache may not have seen it yet). The manager's API
// reader satisfies it; tests fake it.
type OwnerReader interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

var _ OwnerReader = client.Reader(nil)

// Mutator is the /mutate handler: it decides governed workloads on CREATE
// and patches in the directives of the tenant's scheduler.
type Mutator struct {
	Reviewer *Reviewer
	// Owners reads pods' owners to recognise pods of admitted gangs; nil
	// decides every pod on its own.
	Owners OwnerReader
	// OwnerTimeout bounds one owner read; DefaultOwnerTimeout when zero.
	OwnerTimeout time.Duration
	// ExemptNamespaces are admitted untouched (Mandate's own).
	ExemptNamespaces []string
	// Decisions writes a decision log line per decision; nil writes none.
	Decisions *decisionlog.Logger
}

var _ admission.Handler = (*Mutator)(nil)

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	log := ctrl.LoggerFrom(ctx).WithValues("kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
	obj, resp, done := admit(req, m.ExemptNamespaces)
	if done {
		return observe(webhookMutate, req, start, resp)
	}
	if d, ok, err := gangDirectives(ctx, m.Owners, ownerTimeout(m.OwnerTimeout), obj); err != nil {
		log.Error(err, "unable to read the pod's owner")
		return observe(webhookMutate, req, start, admission.Errored(http.StatusInternalServerError, err))
	} else if ok {
		// Not a decision: the gang was decided when its owner was admitted.
		resp := applyGang(obj, d)
		log.V(1).Info("pod of an admitted gang", "allowed", resp.Allowed)
		return observe(webhookMutate, req, start, resp)
	}
	review, err := m.Reviewer.Review(ctx, obj, requestOf(req))
	if err != nil {
		return decided(ctx, m.Decisions, webhookMutate, req, obj, start, review, err, reviewError(ctx, err))
	}
	d := review.Decision
	log.V(1).Info("decided", "decisionID", d.ID, "allowed", d.Allowed, "revision", d.Revision)
	if !d.Allowed {
		return decided(ctx, m.Decisions, webhookMutate, req, obj, start, review, nil, denied(d))
	}
	resp = admission.Patched("", review.Patch...)
	// Warn-stage violations are among the warnings; dryrun-stage ones are
	// only recorded, in the audit annotations.
	resp.Warnings = d.Warnings
	resp.AuditAnnotations = auditAnnotations(d)
	return decided(ctx, m.Decisions, webhookMutate, req, obj, start, review, nil, resp)
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

// ownerTimeout is d, or DefaultOwnerTimeout when d is not set.
func ownerTimeout(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return DefaultOwnerTimeout
}

// admit does what both workload handlers do first: only CREATEs of
// governed kinds outside exempt namespaces are decided. It returns the
// decoded object, or the response when there is nothing to decide.
func admit(req admission.Request, exempt []string) (*unstructured.Unstructured, admission.Response, bool) {
	gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	if !slices.Contains(governedKinds, gvk) {
		return nil, admission.Allowed("not governed"), true
	}
	if req.Operation != admissionv1.Create {
		return nil, admission.Allowed("only creates are governed"), true
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
	}
}

// gangDirectives returns the directives recorded on the controlling owner
// of a pod when that owner is a governed gang kind that was admitted. ok is
// false for anything else: not a pod, no such owner, an owner without
// directives, or an owner that is gone or was replaced (UID mismatch).
func gangDirectives(ctx context.Context, owners OwnerReader, timeout time.Duration, obj *unstructured.Unstructured) (evaluator.Directives, bool, error) {
	if owners == nil || obj.GroupVersionKind() != podGVK {
		return evaluator.Directives{}, false, nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || !workload.IsGangOwner(ref) {
		return evaluator.Directives{}, false, nil
	}
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion(ref.APIVersion)
	owner.SetKind(ref.Kind)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := owners.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, owner); err != nil {
		if apierrors.IsNotFound(err) {
			return evaluator.Directives{}, false, nil
		}
		return evaluator.Directives{}, false, fmt.Errorf("unable to read owner %s %s/%s: %w", ref.Kind, obj.GetNamespace(), ref.Name, err)
	}
	if ref.UID != "" && owner.GetUID() != ref.UID {
		return evaluator.Directives{}, false, nil
	}
	raw, ok := owner.GetAnnotations()[scheduler.AnnotationDirectives]
	if !ok {
		return evaluator.Directives{}, false, nil
	}
	var d evaluator.Directives
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return evaluator.Directives{}, false, fmt.Errorf("owner %s %s/%s carries unreadable %s: %w",
			ref.Kind, obj.GetNamespace(), ref.Name, scheduler.AnnotationDirectives, err)
	}
	return d, true, nil
}

// applyGang admits a pod of an admitted gang with the directives its owner
// was admitted with: never re-decided, so never counted twice nor denied
// on its own.
func applyGang(obj *unstructured.Unstructured, d evaluator.Directives) admission.Response {
	w, err := workload.Normalize(obj)
	if err != nil {
		return inputError(err)
	}
	mutated, err := scheduler.Render(obj, w, d)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("the owner's directives: %w", err))
	}
	patch, err := scheduler.Patch(obj, mutated)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Patched("pod of an admitted gang", patch...)
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
