package webhook

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/review"
)

// Validator is the /validate handler. It guards namespaces' tenant label
// (see Tenancy) and schedulers' evictions (see Evictions) and, through the decision service's Validate, decides as a
// backstop governed workloads the mutating webhook did not seal (it did
// not run, or was skipped) and checks UPDATEs of admitted workloads.
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
	Seal *review.Seal
	// Evictions guards schedulers' evictions (see Evictions); nil allows
	// them.
	Evictions *Evictions
}

var _ admission.Handler = (*Validator)(nil)

var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// Handle implements admission.Handler.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if action, ok := evictionAction(req); ok {
		if v.Evictions == nil {
			return observe(webhookEvictions, req, time.Now(), admission.Allowed("evictions not guarded"))
		}
		return v.Evictions.Handle(ctx, req, action)
	}
	start := time.Now()
	if (schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}) == namespaceGVK {
		if v.Tenancy == nil {
			return observe(webhookValidate, req, start, admission.Allowed("namespaces not guarded"))
		}
		return observe(webhookValidate, req, start, v.Tenancy.Handle(ctx, req))
	}
	r := v.Reviewer.Validate(ctx, requestOf(req), review.Gate{ExemptNamespaces: v.ExemptNamespaces, Seal: v.Seal})
	if r.Decided != nil && r.Decided.Err == nil {
		d := r.Decided.Result.Decision
		ctrl.LoggerFrom(ctx).Info("decided unmarked workload", "kind", req.Kind.Kind, "namespace", req.Namespace,
			"name", req.Name, "decisionID", d.ID, "allowed", d.Allowed)
	}
	return respond(ctx, v.Decisions, webhookValidate, req, start, r)
}
