package webhook

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/review"
)

// decided finishes a request the decision service decided: it records the
// latency since start, counts the decision (and its violations, or why it
// failed) and writes its decision log line, then returns resp. Every
// decision of a handler goes through here exactly once, so decision lines
// and mandate_decisions_total agree.
func decided(ctx context.Context, log *decisionlog.Logger, webhook string, req admission.Request,
	start time.Time, d *review.Decided, resp admission.Response,
) admission.Response {
	latency := time.Since(start)
	observeLatency(webhook, req, latency, resp)
	countDecision(webhook, d.Result.Decision, d.Err)
	if log == nil {
		return resp
	}
	obj := d.Object
	e := decisionlog.Entry{
		Webhook:      webhook,
		Request:      requestOf(req).Request,
		APIVersion:   obj.GetAPIVersion(),
		Kind:         obj.GetKind(),
		Namespace:    obj.GetNamespace(),
		Name:         obj.GetName(),
		Tenant:       d.Result.Workload.Tenant,
		Decision:     d.Result.Decision,
		Err:          d.Err,
		Latency:      latency,
		Object:       obj.Object,
		Reinvocation: d.Reinvocation,
	}
	if s := d.Result.Shadow; s != nil {
		e.Shadow = &decisionlog.Shadow{Revision: s.Revision, Decision: s.Decision, Differences: s.Differences}
	}
	log.Log(ctx, &e)
	return resp
}
