package review_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
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
		want              []review.Difference
	}{
		{name: "same", active: admitted, candidate: with(admitted, func(*evaluator.Decision) {})},
		{name: "nil and empty maps are the same", active: with(admitted, func(d *evaluator.Decision) { d.Directives.Annotations = nil }),
			candidate: with(admitted, func(d *evaluator.Decision) { d.Directives.Annotations = map[string]string{} })},
		{name: "allowed to denied", active: admitted, candidate: denied, want: []review.Difference{
			{review.DiffAllowedToDenied, "allowed: true -> false"},
			{review.DiffViolations, "violations: [] -> [priority.not_allowed, quota.ceiling]"},
			{review.DiffWarnings, "warnings: [w1] -> []"},
		}},
		{name: "denied to allowed", active: denied, candidate: with(denied, func(d *evaluator.Decision) { d.Allowed, d.Violations = true, nil }), want: []review.Difference{
			{review.DiffDeniedToAllowed, "allowed: false -> true"},
			{review.DiffViolations, "violations: [priority.not_allowed, quota.ceiling] -> []"},
		}},
		{name: "other violations, in any order", active: denied,
			candidate: with(denied, func(d *evaluator.Decision) {
				d.Violations = []evaluator.Violation{{Code: "quota.ceiling"}, {Code: "priority.not_allowed"}}
			})},
		{name: "a violation more", active: denied,
			candidate: with(denied, func(d *evaluator.Decision) {
				d.Violations = append(d.Violations, evaluator.Violation{Code: "topology.unsatisfiable"})
			}),
			want: []review.Difference{{review.DiffViolations, "violations: [priority.not_allowed, quota.ceiling] -> [priority.not_allowed, quota.ceiling, topology.unsatisfiable]"}}},
		{name: "directives", active: admitted, candidate: with(admitted, func(d *evaluator.Decision) {
			d.Directives.Queue, d.Directives.Preemptible, d.Directives.GangMin = "research-vision", false, 0
			d.Directives.RequiredLevel = "block"
			d.Directives.Labels = map[string]string{"a": "2", "b": "1"}
		}), want: []review.Difference{
			{review.DiffDirectives, "directives.queue: research -> research-vision"},
			{review.DiffDirectives, "directives.preemptible: true -> false"},
			{review.DiffDirectives, "directives.gangMin: 2 -> 0"},
			{review.DiffDirectives, `directives.requiredLevel: "" -> block`},
			{review.DiffDirectives, "directives.labels: {a=1} -> {a=2,b=1}"},
		}},
		{name: "warnings", active: admitted, candidate: with(admitted, func(d *evaluator.Decision) { d.Warnings = []string{"w1", "w2"} }),
			want: []review.Difference{{review.DiffWarnings, "warnings: [w1] -> [w1, w2]"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, review.Differences(tc.active, tc.candidate))
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
	plain, _ := reviewtest.Service(t)
	want, err := plain.Review(context.Background(), reviewtest.Object(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	require.True(t, want.Decision.Allowed)

	r, active := reviewtest.Service(t)
	shadow := &reviewtest.RecordingDecider{Next: candidateEvaluator(t)}
	r.Shadow = func() review.Decider { return shadow }
	denied := differences(t, review.DiffAllowedToDenied)
	different := agreements(t, "different")

	got, err := r.Review(context.Background(), reviewtest.Object(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	require.True(t, got.Decision.Allowed, "the shadow's denial is not enforced")
	assert.Equal(t, want.Patch, got.Patch, "the outcome is the active revision's")
	assert.Equal(t, "embedded", got.Decision.Revision)
	assert.Equal(t, denied+1, differences(t, review.DiffAllowedToDenied))
	assert.Equal(t, different+1, agreements(t, "different"))
	require.NotNil(t, got.Shadow)
	assert.Equal(t, "candidate", got.Shadow.Revision)
	assert.False(t, got.Shadow.Decision.Allowed)
	assert.Contains(t, got.Shadow.Differences, "allowed: true -> false")
	assert.Contains(t, got.Shadow.Differences, "violations: [] -> [PRIORITY_NOT_ALLOWED]")

	// The shadow decided exactly what the active revision decided: the
	// usage from before the active revision reserved the sweep's GPUs.
	require.Equal(t, 1, shadow.Calls())
	assert.Equal(t, active.Last().Usage, shadow.Last().Usage)
	assert.Same(t, active.Last().Cluster, shadow.Last().Cluster)
	assert.Equal(t, 8, r.State.Usage("research-vision")["research-vision"]["nvidia.com/gpu"].Total, "reserved once, by the active revision")
}

func TestReviewerShadowErrorsNeverFailAdmission(t *testing.T) {
	r, _ := reviewtest.Service(t)
	r.Shadow = func() review.Decider {
		return reviewtest.FailingDecider{Err: errors.New("evaluation deadline exceeded")}
	}
	errors := agreements(t, "error")
	result, err := r.Review(context.Background(), reviewtest.Object(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	assert.True(t, result.Decision.Allowed)
	assert.NotNil(t, result.Mutated)
	assert.Nil(t, result.Shadow)
	assert.Equal(t, errors+1, agreements(t, "error"))

	// No shadow revision active (yet): nothing to compare.
	r.Shadow = func() review.Decider { return nil }
	result, err = r.Review(context.Background(), reviewtest.Object(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	assert.Nil(t, result.Shadow)
}

func TestReviewerShadowAgreeing(t *testing.T) {
	r, _ := reviewtest.Service(t)
	r.Shadow = func() review.Decider { return reviewtest.DefaultEvaluator(t) }
	same := agreements(t, "same")
	result, err := r.Review(context.Background(), reviewtest.Object(t, fixtures.VisionSweep), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	require.NotNil(t, result.Shadow)
	assert.Empty(t, result.Shadow.Differences)
	assert.Equal(t, same+1, agreements(t, "same"))
}

// agreements is mandate_shadow_decisions_total{agreement}.
func agreements(t *testing.T, agreement string) float64 {
	return reviewtest.Counter(t, "mandate_shadow_decisions_total", map[string]string{"agreement": agreement})
}

// differences is mandate_shadow_differences_total{kind}.
func differences(t *testing.T, kind string) float64 {
	return reviewtest.Counter(t, "mandate_shadow_differences_total", map[string]string{"kind": kind})
}
