package webhook

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

func TestReviewerSourceDecidesWithOneRevision(t *testing.T) {
	r, _ := reviewtest.Service(t)
	r2 := fixtures.Evaluator(t, "r2", nil)
	var active atomic.Pointer[evaluator.Evaluator]
	var asked atomic.Int32
	r.Decider = nil
	r.Source = func() review.Decider {
		asked.Add(1)
		if ev := active.Load(); ev != nil {
			return ev
		}
		return nil
	}
	m := &Mutator{Reviewer: r}
	req := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "bob", "vision-devs")

	resp := m.Handle(context.Background(), req)
	require.False(t, resp.Allowed, "nothing active yet")
	assert.Contains(t, resp.Result.Message, review.ErrNoPolicy.Error())

	active.Store(reviewtest.DefaultEvaluator(t))
	resp = m.Handle(context.Background(), req)
	require.True(t, resp.Allowed, "result: %+v", resp.Result)
	assert.Equal(t, "embedded", resp.AuditAnnotations[AuditPolicyRevision])
	assert.Equal(t, "embedded", applyPatch(t, req, resp).GetAnnotations()[review.AnnotationPolicyRevision])

	active.Store(r2)
	resp = m.Handle(context.Background(), req)
	require.True(t, resp.Allowed, "result: %+v", resp.Result)
	assert.Equal(t, "r2", resp.AuditAnnotations[AuditPolicyRevision])
	assert.Equal(t, "r2", applyPatch(t, req, resp).GetAnnotations()[review.AnnotationPolicyRevision])
	assert.EqualValues(t, 3, asked.Load(), "the source is asked once per review")
}

func TestDeniedObjectsCarryNoRevisionAnnotation(t *testing.T) {
	r, _ := reviewtest.Service(t)
	m := &Mutator{Reviewer: r}
	resp := m.Handle(context.Background(), admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "alice", "platform-devs"))
	require.False(t, resp.Allowed)
	assert.Empty(t, resp.Patch)
	assert.Equal(t, "embedded", resp.AuditAnnotations[AuditPolicyRevision])
}
