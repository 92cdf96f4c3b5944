package evaluator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// stagedEvaluator is the default authority model with its enforcement data
// replaced: the Rego is untouched.
func stagedEvaluator(t *testing.T, enforcement map[string]any) *evaluator.Evaluator {
	t.Helper()
	return fixtures.Evaluator(t, "staged", func(model map[string]any) { model["enforcement"] = enforcement })
}

// TestDecideStagesEnforcement decides the same workload (a priority class
// above its tenant's tiers) under each enforcement action and checks the
// decoded Decision.
func TestDecideStagesEnforcement(t *testing.T) {
	in := input("research-vision", 1, 8, nil)
	in.Workload.PriorityClass = "build"
	in.Cluster = fixtureSnapshot(t)
	const msg = "priority class build (100) is above tenant research-vision's tier; it may use: train (50), build-preemptible (75)"
	staged := func(action string) []evaluator.Violation {
		return []evaluator.Violation{{Code: "PRIORITY_NOT_ALLOWED", Dimension: evaluator.DimensionPriority, Message: msg, Enforcement: action,
			Facts: evaluator.Facts{Tenant: "research-vision", Class: "build", Classes: []string{"train", "build-preemptible"}}}}
	}
	for _, tc := range []struct {
		name         string
		enforcement  map[string]any
		wantAllowed  bool
		wantDenied   []evaluator.Violation
		wantWarned   []evaluator.Violation
		wantDryRun   []evaluator.Violation
		wantWarnings []string
		wantVerdict  string
	}{
		{name: "unlisted denies", enforcement: map[string]any{},
			wantDenied: staged(evaluator.EnforceDeny), wantVerdict: "deny"},
		{name: "dryrun", enforcement: map[string]any{"PRIORITY_NOT_ALLOWED": evaluator.EnforceDryRun},
			wantAllowed: true, wantDryRun: staged(evaluator.EnforceDryRun), wantVerdict: "dryrun"},
		{name: "warn", enforcement: map[string]any{"PRIORITY_NOT_ALLOWED": evaluator.EnforceWarn},
			wantAllowed: true, wantWarned: staged(evaluator.EnforceWarn), wantWarnings: []string{"PRIORITY_NOT_ALLOWED: " + msg}, wantVerdict: "warn"},
		{name: "deny", enforcement: map[string]any{"PRIORITY_NOT_ALLOWED": evaluator.EnforceDeny},
			wantDenied: staged(evaluator.EnforceDeny), wantVerdict: "deny"},
		{name: "dimension entry", enforcement: map[string]any{"priority": evaluator.EnforceWarn},
			wantAllowed: true, wantWarned: staged(evaluator.EnforceWarn), wantWarnings: []string{"PRIORITY_NOT_ALLOWED: " + msg}, wantVerdict: "warn"},
		{name: "code entry wins over dimension", enforcement: map[string]any{"priority": evaluator.EnforceWarn, "PRIORITY_NOT_ALLOWED": evaluator.EnforceDryRun},
			wantAllowed: true, wantDryRun: staged(evaluator.EnforceDryRun), wantVerdict: "dryrun"},
		{name: "unknown action denies and says so", enforcement: map[string]any{"priority": "dry-run"},
			wantDenied: staged(evaluator.EnforceDeny), wantVerdict: "deny",
			wantWarnings: []string{`PRIORITY_NOT_ALLOWED: enforcement "dry-run" of "priority" in the authority data (enforcement) is not deny, warn or dryrun, so it denies`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			in.Explain = true
			d, err := stagedEvaluator(t, tc.enforcement).Decide(context.Background(), in)
			require.NoError(t, err)
			require.Equal(t, tc.wantAllowed, d.Allowed)
			require.Equal(t, tc.wantDenied, d.Violations, "Violations")
			require.Equal(t, tc.wantWarned, d.Warned, "Warned")
			require.Equal(t, tc.wantDryRun, d.DryRun, "DryRun")
			require.Equal(t, tc.wantWarnings, d.Warnings, "Warnings")
			for _, e := range d.Explanations {
				if e.Dimension == evaluator.DimensionPriority {
					require.Equal(t, tc.wantVerdict, e.Verdict, "priority verdict")
				}
			}
		})
	}
}
