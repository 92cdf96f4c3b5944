package webhook

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/client-go/rest"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
)

func TestReviewerSourceDecidesWithOneRevision(t *testing.T) {
	r, _ := newTestReviewer(t)
	r2 := fixtures.Evaluator(t, "r2", nil)
	var active atomic.Pointer[evaluator.Evaluator]
	var asked atomic.Int32
	r.Decider = nil
	r.Source = func() Decider {
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
	assert.Contains(t, resp.Result.Message, ErrNoPolicy.Error())

	active.Store(testEvaluator(t))
	resp = m.Handle(context.Background(), req)
	require.True(t, resp.Allowed, "result: %+v", resp.Result)
	assert.Equal(t, "embedded", resp.AuditAnnotations[AuditPolicyRevision])
	assert.Equal(t, "embedded", applyPatch(t, req, resp).GetAnnotations()[AnnotationPolicyRevision])

	active.Store(r2)
	resp = m.Handle(context.Background(), req)
	require.True(t, resp.Allowed, "result: %+v", resp.Result)
	assert.Equal(t, "r2", resp.AuditAnnotations[AuditPolicyRevision])
	assert.Equal(t, "r2", applyPatch(t, req, resp).GetAnnotations()[AnnotationPolicyRevision])
	assert.EqualValues(t, 3, asked.Load(), "the source is asked once per review")
}

func TestDeniedObjectsCarryNoRevisionAnnotation(t *testing.T) {
	r, _ := newTestReviewer(t)
	m := &Mutator{Reviewer: r}
	resp := m.Handle(context.Background(), admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "alice", "platform-devs"))
	require.False(t, resp.Allowed)
	assert.Empty(t, resp.Patches)
	assert.Equal(t, "embedded", resp.AuditAnnotations[AuditPolicyRevision])
}

func TestServerPolicyFromBundle(t *testing.T) {
	ctx := context.Background()
	b, err := bundles.Build(ctx, "../policies", bundles.BuildOptions{Revision: "b1"})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	require.NoError(t, bundles.WriteFile(path, b))
	o := Options{RestConfig: &rest.Config{}, Bundle: &bundles.SourceOptions{File: path}}
	require.NoError(t, o.defaults())

	s := &Server{}
	r, src, err := s.policy(ctx, o)
	require.NoError(t, err)
	require.NotNil(t, src)
	require.NotNil(t, s.Activator)
	assert.Equal(t, "b1", s.Activator.Current().Revision())
	assert.Equal(t, "b1", r.Source().(*evaluator.Evaluator).Revision())
	s.cacheSynced.Store(true)
	assert.NoError(t, s.ready(nil))

	// A missing bundle: not ready, and nothing decides, until one activates.
	o.Bundle = &bundles.SourceOptions{File: filepath.Join(t.TempDir(), "missing.tar.gz")}
	s = &Server{}
	r, _, err = s.policy(ctx, o)
	require.NoError(t, err)
	s.cacheSynced.Store(true)
	assert.ErrorContains(t, s.ready(nil), "no policy bundle activated yet")
	assert.Nil(t, r.Source())
}
