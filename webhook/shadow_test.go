package webhook

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/test/fixtures"
)

func TestDifferences(t *testing.T) {
	admitted := evaluator.Decision{Allowed: true, Warnings: []string{"w1"},
		Directives: evaluator.Directives{Scheduler: "volcano", Queue: "research", PriorityClass: "train", Preemptible: true,
			GangMin: 2, Labels: map[string]string{"a": "1"}}}
	denied := evaluator.Decision{Allowed: false, Violations: []evaluator.Violation{{Code: "priority.not_allowed"}, {Code: "quota.ceiling"}}}
	with := func(d evaluator.Decision, edit func(*evaluator.Decision)) evaluator.Decision {
		d.Directives.Labels = map[string]string{"a": "1"}
		edit(&d)
		return d
	}
	for _, tc := range []struct {
		name              string
		active, candidate evaluator.Decision
		want              []Difference
	}{
		{name: "same", active: admitted, candidate: with(admitted, func(*evaluator.Decision) {})},
		{name: "nil and empty maps are the same", active: with(admitted, func(d *evaluator.Decision) { d.Directives.Annotations = nil }),
			candidate: with(admitted, func(d *evaluator.Decision) { d.Directives.Annotations = map[string]string{} })},
		{name: "allowed to denied", active: admitted, candidate: denied, want: []Difference{
			{DiffAllowedToDenied, "allowed: true -> false"},
			{DiffViolations, "violations: [] -> [priority.not_allowed, quota.ceiling]"},
			{DiffWarnings, "warnings: [w1] -> []"},
		}},
		{name: "denied to allowed", active: denied, candidate: with(denied, func(d *evaluator.Decision) { d.Allowed, d.Violations = true, nil }), want: []Difference{
			{DiffDeniedToAllowed, "allowed: false -> true"},
			{DiffViolations, "violations: [priority.not_allowed, quota.ceiling] -> []"},
		}},
		{name: "other violations, in any order", active: denied,
			candidate: with(denied, func(d *evaluator.Decision) {
				d.Violations = []evaluator.Violation{{Code: "quota.ceiling"}, {Code: "priority.not_allowed"}}
			})},
		{name: "a violation more", active: denied,
			candidate: with(denied, func(d *evaluator.Decision) {
				d.Violations = append(d.Violations, evaluator.Violation{Code: "topology.unsatisfiable"})
			}),
			want: []Difference{{DiffViolations, "violations: [priority.not_allowed, quota.ceiling] -> [priority.not_allowed, quota.ceiling, topology.unsatisfiable]"}}},
		{name: "directives", active: admitted, candidate: with(admitted, func(d *evaluator.Decision) {
			d.Directives.Queue, d.Directives.Preemptible, d.Directives.GangMin = "research-vision", false, 0
			d.Directives.RequiredLevel = "block"
			d.Directives.Labels = map[string]string{"a": "2", "b": "1"}
		}), want: []Difference{
			{DiffDirectives, "directives.queue: research -> research-vision"},
			{DiffDirectives, "directives.preemptible: true -> false"},
			{DiffDirectives, "directives.gangMin: 2 -> 0"},
			{DiffDirectives, `directives.requiredLevel: "" -> block`},
			{DiffDirectives, "directives.labels: {a=1} -> {a=2,b=1}"},
		}},
		{name: "warnings", active: admitted, candidate: with(admitted, func(d *evaluator.Decision) { d.Warnings = []string{"w1", "w2"} }),
			want: []Difference{{DiffWarnings, "warnings: [w1] -> [w1, w2]"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Differences(tc.active, tc.candidate))
		})
	}
}

// candidateEvaluator is the default model with "train" taken from
// research-vision's priority classes: its training jobs are denied.
func candidateEvaluator(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	p, err := evaluator.LoadFS(policies.FS, "candidate")
	require.NoError(t, err)
	tenant := p.Data["mandate"].(map[string]any)["model"].(map[string]any)["tenants"].(map[string]any)["research-vision"].(map[string]any)
	tenant["priorityClasses"] = []any{"build-preemptible"}
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	return ev
}

func TestReviewerShadowIsNeverEnforced(t *testing.T) {
	req := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "bob", "vision-devs")
	plain, _ := newTestReviewer(t)
	want := (&Mutator{Reviewer: plain}).Handle(context.Background(), req)
	require.True(t, want.Allowed, "result: %+v", want.Result)

	r, active := newTestReviewer(t)
	shadow := &recordingDecider{next: candidateEvaluator(t)}
	r.Shadow = func() Decider { return shadow }
	denied := count(t, shadowDifferences.WithLabelValues(DiffAllowedToDenied))
	different := count(t, shadowDecisions.WithLabelValues("different"))

	got := (&Mutator{Reviewer: r}).Handle(context.Background(), req)
	require.True(t, got.Allowed, "the shadow's denial is not enforced: %+v", got.Result)
	assert.Equal(t, want.Patches, got.Patches, "the response is the active revision's")
	assert.Equal(t, "embedded", got.AuditAnnotations[AuditPolicyRevision])
	assert.Equal(t, denied+1, count(t, shadowDifferences.WithLabelValues(DiffAllowedToDenied)))
	assert.Equal(t, different+1, count(t, shadowDecisions.WithLabelValues("different")))

	// The shadow decided exactly what the active revision decided: the
	// usage from before the active revision reserved the sweep's GPUs.
	require.EqualValues(t, 1, shadow.calls.Load())
	assert.Equal(t, active.last.Usage, shadow.last.Usage)
	assert.Same(t, active.last.Cluster, shadow.last.Cluster)
	assert.Equal(t, 8, r.State.Usage("research-vision")["research-vision"]["nvidia.com/gpu"].Total, "reserved once, by the active revision")

	obj := objectOf(t, fixtures.VisionSweep)
	review, err := r.Review(context.Background(), obj, evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	require.NotNil(t, review.Shadow)
	assert.True(t, review.Decision.Allowed)
	assert.Equal(t, "candidate", review.Shadow.Revision)
	assert.False(t, review.Shadow.Decision.Allowed)
	assert.Contains(t, review.Shadow.Differences, "allowed: true -> false")
	assert.Contains(t, review.Shadow.Differences, "violations: [] -> [PRIORITY_NOT_ALLOWED]")
}

func TestReviewerShadowErrorsNeverFailAdmission(t *testing.T) {
	r, _ := newTestReviewer(t)
	r.Shadow = func() Decider { return failingDecider{errors.New("evaluation deadline exceeded")} }
	errors := count(t, shadowDecisions.WithLabelValues("error"))
	review, err := r.Review(context.Background(), objectOf(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	assert.True(t, review.Decision.Allowed)
	assert.NotNil(t, review.Mutated)
	assert.Nil(t, review.Shadow)
	assert.Equal(t, errors+1, count(t, shadowDecisions.WithLabelValues("error")))

	// No shadow revision active (yet): nothing to compare.
	r.Shadow = func() Decider { return nil }
	review, err = r.Review(context.Background(), objectOf(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	assert.Nil(t, review.Shadow)
}

func TestReviewerShadowAgreeing(t *testing.T) {
	r, _ := newTestReviewer(t)
	r.Shadow = func() Decider { return testEvaluator(t) }
	same := count(t, shadowDecisions.WithLabelValues("same"))
	review, err := r.Review(context.Background(), objectOf(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	require.NotNil(t, review.Shadow)
	assert.Empty(t, review.Shadow.Differences)
	assert.Equal(t, same+1, count(t, shadowDecisions.WithLabelValues("same")))
}

func objectOf(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &obj.Object))
	return obj
}

// count reads a counter's value.
func count(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
