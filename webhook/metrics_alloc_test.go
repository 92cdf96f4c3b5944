package webhook

import (
	"errors"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/evaluator"
)

// TestMetricsDoNotAllocate: counting and timing a request, its decision
// and its violations allocates nothing once a series exists.
func TestMetricsDoNotAllocate(t *testing.T) {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}}}
	denied := admission.Denied("no")
	denied.Result.Code = http.StatusForbidden
	d := evaluator.Decision{Violations: []evaluator.Violation{{Code: "QUOTA_EXCEEDS_CEILING", Dimension: evaluator.DimensionQuota}},
		Warned: []evaluator.Violation{{Code: "TOPOLOGY_WIDE", Dimension: evaluator.DimensionTopology}}}
	failed := errors.New("boom")
	record := func() {
		observeLatency(webhookMutate, req, time.Millisecond, denied)
		observeLatency(webhookValidate, req, time.Millisecond, admission.Allowed(""))
		countDecision(webhookMutate, d, nil)
		countDecision(webhookValidate, evaluator.Decision{Allowed: true}, nil)
		countDecision(webhookMutate, evaluator.Decision{}, failed)
	}
	record() // the first of each series resolves it
	if n := testing.AllocsPerRun(100, record); n != 0 {
		t.Fatalf("recording metrics allocates %v times per request, want 0", n)
	}
}
