package webhook

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
)

// decided finishes a request the Reviewer was asked to decide: it records
// the latency since start, counts the decision (and its violations, or why
// it failed) and writes its decision log line, then returns resp. Every
// Review call of a handler goes through here exactly once, so decision
// lines and mandate_decisions_total agree.
func decided(ctx context.Context, log *decisionlog.Logger, webhook string, req admission.Request,
	obj *unstructured.Unstructured, start time.Time, result review.Result, err error, resp admission.Response,
) admission.Response {
	latency := time.Since(start)
	observeLatency(webhook, req, latency, resp)
	countDecision(webhook, result.Decision, err)
	if log == nil {
		return resp
	}
	e := decisionlog.Entry{
		Webhook:    webhook,
		Request:    requestOf(req),
		APIVersion: obj.GetAPIVersion(),
		Kind:       obj.GetKind(),
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		Tenant:     result.Workload.Tenant,
		Decision:   result.Decision,
		Err:        err,
		Latency:    latency,
		Object:     obj.Object,
	}
	_, e.Reinvocation, _ = scheduler.RecordedDirectives(obj.GetAnnotations())
	if s := result.Shadow; s != nil {
		e.Shadow = &decisionlog.Shadow{Revision: s.Revision, Decision: s.Decision, Differences: s.Differences}
	}
	log.Log(ctx, &e)
	return resp
}
