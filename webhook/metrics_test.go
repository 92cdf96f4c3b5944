package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

func histogramCount(t *testing.T, labels ...string) uint64 {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, admissionDuration.WithLabelValues(labels...).(prometheus.Histogram).Write(m))
	return m.GetHistogram().GetSampleCount()
}

// TestDecisionMetricsAndLog: each decision is counted once, by result, with
// its violations by dimension and code, timed in the admission histogram,
// and written as one decision line carrying the response's decision id; a
// pod of an admitted gang is timed and counted as an allowed admission but
// is no decision.
func TestDecisionMetricsAndLog(t *testing.T) {
	r, _ := reviewtest.Service(t)
	var buf bytes.Buffer
	dl, err := decisionlog.New(slog.NewJSONHandler(&buf, nil), decisionlog.DefaultOptions())
	require.NoError(t, err)
	m := &Mutator{Reviewer: r, Decisions: dl}
	ctx := context.Background()

	deniedBefore := testutil.ToFloat64(decisions.WithLabelValues(webhookMutate, resultDenied))
	allowedBefore := testutil.ToFloat64(decisions.WithLabelValues(webhookMutate, resultAllowed))
	quotaBefore := testutil.ToFloat64(violationsTotal.WithLabelValues("quota", "QUOTA_EXCEEDS_CEILING", evaluator.EnforceDeny))
	jobDenied := histogramCount(t, webhookMutate, "CREATE", "Job", resultDenied)
	jobAllowed := histogramCount(t, webhookMutate, "CREATE", "Job", resultAllowed)
	podAllowed := histogramCount(t, webhookMutate, "CREATE", "Pod", resultAllowed)

	deny := m.Handle(ctx, admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "alice"))
	require.False(t, deny.Allowed)
	allowReq := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "alice")
	allow := m.Handle(ctx, allowReq)
	require.True(t, allow.Allowed)

	assert.Equal(t, deniedBefore+1, testutil.ToFloat64(decisions.WithLabelValues(webhookMutate, resultDenied)))
	assert.Equal(t, allowedBefore+1, testutil.ToFloat64(decisions.WithLabelValues(webhookMutate, resultAllowed)))
	assert.Equal(t, jobDenied+1, histogramCount(t, webhookMutate, "CREATE", "Job", resultDenied))
	assert.Equal(t, jobAllowed+1, histogramCount(t, webhookMutate, "CREATE", "Job", resultAllowed))

	lines := fixtures.JSONLines(t, buf.Bytes())
	require.Len(t, lines, 2, "one line per decision:\n%s", buf.String())
	assert.Equal(t, deny.AuditAnnotations[AuditDecisionID], lines[0]["id"])
	assert.Equal(t, "denied", lines[0]["result"])
	assert.Equal(t, "platform", lines[0]["tenant"])
	require.NotEmpty(t, lines[0]["violations"])
	v := lines[0]["violations"].([]any)[0].(map[string]any)
	assert.Equal(t, "QUOTA_EXCEEDS_CEILING", v["code"])
	assert.Equal(t, quotaBefore+1, testutil.ToFloat64(violationsTotal.WithLabelValues("quota", "QUOTA_EXCEEDS_CEILING", evaluator.EnforceDeny)),
		"the denial's violation is counted by dimension and code")
	assert.Equal(t, allow.AuditAnnotations[AuditDecisionID], lines[1]["id"])
	assert.Equal(t, "allowed", lines[1]["result"])
	assert.Equal(t, "embedded", lines[1]["revision"])
	assert.Equal(t, "volcano", lines[1]["directives"].(map[string]any)["scheduler"])

	// A pod of the now admitted Job: timed, counted allowed, not a decision.
	job := applyPatch(t, allowReq, allow)
	job.SetUID("7c1d3e4f-0000-4000-8000-00000000000a")
	r.Owners = &fakeOwners{objs: map[string]*unstructured.Unstructured{"Job/vision/vit-sweep": job}}
	decided := testutil.ToFloat64(decisions.WithLabelValues(webhookMutate, resultAllowed))
	require.True(t, m.Handle(ctx, admissionRequest(t, admissionv1.Create, sweepPod, "", "job-controller")).Allowed)
	assert.Equal(t, podAllowed+1, histogramCount(t, webhookMutate, "CREATE", "Pod", resultAllowed))
	assert.Equal(t, decided, testutil.ToFloat64(decisions.WithLabelValues(webhookMutate, resultAllowed)), "a gang's pod is no decision")
	assert.Len(t, fixtures.JSONLines(t, buf.Bytes()), 2, "a gang's pod writes no decision line")
}

// TestEvaluationErrorReasons: a failed decision is counted as an error
// decision, by reason, and still written to the decision log.
func TestEvaluationErrorReasons(t *testing.T) {
	r, _ := reviewtest.Service(t)
	for _, tc := range []struct {
		err        error
		wantReason string
	}{
		{fmt.Errorf("%w (500ms, revision %q)", evaluator.ErrTimeout, "r1"), reasonTimeout},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), reasonTimeout},
		{review.ErrNoPolicy, reasonNoPolicy},
		{fmt.Errorf("policy revision %q failed: boom", "r1"), reasonError},
	} {
		t.Run(tc.wantReason+" "+tc.err.Error(), func(t *testing.T) {
			var buf bytes.Buffer
			dl, err := decisionlog.New(slog.NewJSONHandler(&buf, nil), decisionlog.Options{Enabled: true, SampleRate: 0})
			require.NoError(t, err)
			v := &Validator{Reviewer: &review.Service{Decider: reviewtest.FailingDecider{Err: tc.err}, State: r.State}, Decisions: dl}
			before := testutil.ToFloat64(evaluationErrors.WithLabelValues(tc.wantReason))
			errorsBefore := testutil.ToFloat64(decisions.WithLabelValues(webhookValidate, resultError))

			resp := v.Handle(context.Background(), admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "alice"))

			require.False(t, resp.Allowed)
			assert.Equal(t, before+1, testutil.ToFloat64(evaluationErrors.WithLabelValues(tc.wantReason)))
			assert.Equal(t, errorsBefore+1, testutil.ToFloat64(decisions.WithLabelValues(webhookValidate, resultError)))
			lines := fixtures.JSONLines(t, buf.Bytes())
			require.Len(t, lines, 1, "errors are logged even at sample rate 0")
			assert.Equal(t, "error", lines[0]["result"])
			assert.Contains(t, lines[0]["error"], tc.err.Error())
		})
	}
}

func TestLabelsAreBounded(t *testing.T) {
	assert.Equal(t, "other", operationLabel("SOMETHING"))
	assert.Equal(t, "CREATE", operationLabel(admissionv1.Create))
	req := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "alice")
	assert.Equal(t, "Job", kindLabel(req.Kind))
	req.Kind.Group = "batch.volcano.sh"
	assert.Equal(t, "VolcanoJob", kindLabel(req.Kind))
	req.Kind.Group, req.Kind.Kind = "example.com", "Widget"
	assert.Equal(t, "other", kindLabel(req.Kind))
}

// TestReinvocationIsMarked: deciding an object Mandate already marked (the
// API server's second /mutate call in one request) is a decision of its
// own, marked as a reinvocation.
func TestReinvocationIsMarked(t *testing.T) {
	r, _ := reviewtest.Service(t)
	var buf bytes.Buffer
	dl, err := decisionlog.New(slog.NewJSONHandler(&buf, nil), decisionlog.DefaultOptions())
	require.NoError(t, err)
	m := &Mutator{Reviewer: r, Decisions: dl}
	req := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "alice")
	first := m.Handle(context.Background(), req)
	require.True(t, first.Allowed)
	again := req
	again.Object.Raw, err = json.Marshal(applyPatch(t, req, first).Object)
	require.NoError(t, err)
	require.True(t, m.Handle(context.Background(), again).Allowed)

	lines := fixtures.JSONLines(t, buf.Bytes())
	require.Len(t, lines, 2)
	assert.Equal(t, false, lines[0]["reinvocation"])
	assert.Equal(t, true, lines[1]["reinvocation"])
}

// BenchmarkRecordDecision measures what metrics add to a decided request
// (the decision log off).
func BenchmarkRecordDecision(b *testing.B) {
	req := admissionRequest(b, admissionv1.Create, fixtures.VisionSweep, "", "alice")
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job"}}
	d := &review.Decided{Object: obj, Result: review.Result{Decision: evaluator.Decision{Allowed: true, Warned: []evaluator.Violation{
		{Code: "TOPOLOGY_WAITS", Dimension: evaluator.DimensionTopology, Enforcement: evaluator.EnforceWarn}}}}}
	resp := admission.Allowed("")
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		decided(context.Background(), nil, webhookMutate, req, start, d, resp)
	}
}
