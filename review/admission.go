package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/evaluator"
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

// Request is one admission request, as the admission protocol (Admit,
// Validate) reads it: the transport translates an AdmissionReview's
// request into it.
type Request struct {
	// Request is what a decision sees of the request: operation, user,
	// groups, dry run and uid.
	evaluator.Request
	// Kind is the kind the request is for; its object must be one.
	Kind schema.GroupVersionKind
	// Resource and SubResource are the resource it was made on: an
	// UPDATE of a scalable kind's "scale" subresource is checked as the
	// UPDATE of the object.
	Resource    schema.GroupResource
	SubResource string
	// Namespace and Name are the request's (an object created from a
	// generateName has no name yet).
	Namespace, Name string
	// Object and OldObject are the request's objects, JSON encoded;
	// OldObject only for an UPDATE.
	Object, OldObject []byte
}

// Gate is what the admission webhooks add to the decision service, the
// same for every request: the namespaces they leave alone and the seal
// between the mutating and the validating call.
type Gate struct {
	// ExemptNamespaces are admitted untouched (Mandate's own).
	ExemptNamespaces []string
	// Seal seals the directives Admit records, and Validate admits an
	// object on its recorded directives only under it; nil seals and
	// verifies nothing (Validate then decides again).
	Seal *Seal
}

// Outcome is how a Response answers: what the API server is told.
type Outcome uint8

// The outcomes of an admission request.
const (
	// Allowed admits the object, patched by Response.Patch.
	Allowed Outcome = iota
	// Denied refuses it (403): a decision's violations, or a rule of the
	// protocol (Mandate's own keys are immutable, directives it did not
	// record).
	Denied
	// Invalid refuses a request or object that cannot be read (400).
	Invalid
	// Failed refuses what Mandate could not decide (500).
	Failed
)

// Step names the step of the protocol that answered a request.
type Step uint8

// The steps of the admission protocol.
const (
	// StepNone: nothing to decide (not a governed kind, not a create, an
	// exempt namespace) or nothing readable.
	StepNone Step = iota
	// StepSealed: admitted on the mutating webhook's seal.
	StepSealed
	// StepDaemonSet: the pod of a DaemonSet, admitted undecided.
	StepDaemonSet
	// StepGangPod: a pod (or link) of an admitted gang, admitted with its
	// owner's directives, never decided on its own.
	StepGangPod
	// StepDecision: decided (Response.Decided says how).
	StepDecision
	// StepUpdate: the rules of an UPDATE of an admitted workload.
	StepUpdate
)

// Response is the protocol's answer to one Request, for the transport to
// translate.
type Response struct {
	Outcome Outcome
	Step    Step
	// Message says why it is allowed (empty after a decision), what it is
	// denied for (every violation's message) or, with Err, what failed.
	Message string
	// Reason, set on a decision's denial, names the dimensions it was
	// denied on; Violations are its deny-stage violations, one by one.
	Reason     string
	Violations []evaluator.Violation
	// Err is why an Invalid or Failed request was refused, as its
	// submitter is told.
	Err error
	// Patch admits the object as Mandate mutates it; empty when nothing
	// changes.
	Patch []jsonpatch.JsonPatchOperation
	// Warnings are shown to whoever submitted the object.
	Warnings []string
	// AuditAnnotations record the decision in the API server's audit log.
	AuditAnnotations map[string]string
	// Decided is set when a create was decided (Service.Review): it is
	// counted and written to the decision log; nil otherwise.
	Decided *Decided
}

// Decided is a decision a Response was made from, for metrics and the
// decision log.
type Decided struct {
	// Object is the object as submitted.
	Object *unstructured.Unstructured
	Result Result
	// Err is why the decision failed.
	Err error
	// Reinvocation: the object already carried the directives Mandate
	// records (the API server called /mutate again in the same request).
	Reinvocation bool
}

// Admit is the mutating webhook's protocol: only CREATEs of governed kinds
// outside exempt namespaces are decided; a pod of a DaemonSet without GPUs
// is admitted undecided and a pod of an admitted gang with its owner's
// directives; anything else is decided (Review) and, when admitted,
// patched with its directives and sealed.
func (s *Service) Admit(ctx context.Context, req Request, g Gate) Response {
	obj, resp, done := admit(req, g.ExemptNamespaces)
	if done {
		return resp
	}
	if ok, err := s.DaemonSetPod(ctx, obj); err != nil {
		return failed(StepDaemonSet, err)
	} else if ok {
		return allowed(StepDaemonSet, "pod of a DaemonSet, without GPUs")
	}
	if d, w, ok, err := s.gangDirectives(ctx, obj, req.Request); err != nil {
		return failed(StepGangPod, err)
	} else if ok {
		// Not a decision: the gang was decided when its owner was admitted.
		return gangPod(obj, w, d, req.Request, g.Seal)
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
	// Warn-stage violations are among the warnings; dryrun-stage ones are
	// only recorded, in the audit annotations.
	return decided.respond(Response{Outcome: Allowed, Patch: append(result.Patch, g.Seal.patch(result.Mutated)...),
		Warnings: d.Warnings, AuditAnnotations: auditAnnotations(d)})
}

func newDecided(obj *unstructured.Unstructured, result Result, err error) *Decided {
	_, reinvocation, _ := scheduler.RecordedDirectives(obj.GetAnnotations())
	return &Decided{Object: obj, Result: result, Err: err, Reinvocation: reinvocation}
}

// respond is r, answered by decision d.
func (d *Decided) respond(r Response) Response {
	r.Step, r.Decided = StepDecision, d
	return r
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

// admit does what both webhooks do first with a workload's create: only
// CREATEs of governed kinds outside exempt namespaces are decided. It
// returns the decoded object, or the response when there is nothing to
// decide.
func admit(req Request, exempt []string) (*unstructured.Unstructured, Response, bool) {
	if _, governed := workload.Lookup(req.Kind); !governed {
		return nil, allowed(StepNone, "not governed"), true
	}
	if req.Operation != string(admissionv1.Create) {
		return nil, allowed(StepNone, "only creates are decided"), true
	}
	if slices.Contains(exempt, req.Namespace) {
		return nil, allowed(StepNone, "namespace exempt"), true
	}
	obj, err := decodeObject(req.Object, req.Namespace)
	if err != nil {
		return nil, invalid(err), true
	}
	if obj.GroupVersionKind() != req.Kind {
		return nil, invalid(fmt.Errorf("%w: the request is for a %s but the object is a %s", workload.ErrInvalid, req.Kind, obj.GroupVersionKind())), true
	}
	return obj, Response{}, false
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

// gangPod admits a pod of an admitted gang with the directives its owner
// was admitted with: never re-decided, so never counted twice nor denied
// on its own. w is obj normalised (by gangDirectives).
func gangPod(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives, req evaluator.Request, seal *Seal) Response {
	mutated, patch, err := renderGang(obj, w, d, req)
	if isInputError(err) {
		r := inputError(err)
		r.Step = StepGangPod
		return r
	}
	if err != nil {
		return failed(StepGangPod, err)
	}
	r := allowed(StepGangPod, "pod of an admitted gang")
	r.Patch = append(patch, seal.patch(mutated)...)
	return r
}

func allowed(step Step, message string) Response {
	return Response{Outcome: Allowed, Step: step, Message: message}
}

// refused denies for a rule of the protocol, not a decision.
func refused(message string) Response {
	return Response{Outcome: Denied, Message: message}
}

// invalid refuses a request that cannot be read, err as it is.
func invalid(err error) Response {
	return Response{Outcome: Invalid, Err: err}
}

func failed(step Step, err error) Response {
	return Response{Outcome: Failed, Step: step, Err: err}
}

func isInputError(err error) bool {
	return errors.Is(err, workload.ErrInvalid) || errors.Is(err, workload.ErrUnsupportedKind)
}

// inputError refuses a workload that cannot be read.
func inputError(err error) Response {
	return invalid(fmt.Errorf("mandate cannot read this workload: %w", err))
}

// reviewError classifies an error from Review: bad input is the client's
// (Invalid), anything else Mandate's (Failed).
func reviewError(err error) Response {
	if isInputError(err) {
		return inputError(err)
	}
	return failed(StepDecision, fmt.Errorf("mandate could not decide: %w", err))
}

// denied answers a negative decision: its message is every violation's,
// its reason names the dimensions and its violations are listed one by
// one.
func denied(d evaluator.Decision) Response {
	msgs := make([]string, 0, len(d.Violations))
	var dims []string
	for _, v := range d.Violations {
		msgs = append(msgs, v.Message)
		if !slices.Contains(dims, string(v.Dimension)) {
			dims = append(dims, string(v.Dimension))
		}
	}
	msg := strings.Join(msgs, "; ")
	if msg == "" {
		msg = "denied by the authority model"
	}
	return Response{Outcome: Denied, Message: msg, Reason: "denied by the authority model (" + strings.Join(dims, ", ") + ")",
		Violations: d.Violations, AuditAnnotations: auditAnnotations(d)}
}
