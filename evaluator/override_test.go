package evaluator

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOverride(t *testing.T) {
	deny := Violation{Code: "QUOTA_CEILING", Dimension: DimensionQuota, Message: "over the ceiling", Enforcement: EnforceDeny}
	staged := Violation{Code: "TOPOLOGY_NEVER_FITS", Dimension: DimensionTopology, Message: "never fits", Enforcement: EnforceDryRun}
	denied := func() Decision {
		return Decision{Allowed: false, Violations: []Violation{deny}, DryRun: []Violation{staged}, Warnings: []string{"z"},
			Explanations: []Explanation{{Dimension: DimensionQuota, Verdict: EnforceDeny}, {Dimension: DimensionTopology, Verdict: "dryrun"}}}
	}
	asAction := func(v Violation, a string) Violation { v.Enforcement = a; return v }
	for _, tc := range []struct {
		name   string
		action string
		in     Decision
		want   Decision
	}{
		{name: "none keeps the model's enforcement", action: "", in: denied(), want: denied()},
		{name: "dryrun admits and records", action: EnforceDryRun, in: denied(), want: Decision{Allowed: true,
			DryRun: []Violation{staged, asAction(deny, EnforceDryRun)}, Warnings: []string{"z"},
			Explanations: []Explanation{{Dimension: DimensionQuota, Verdict: EnforceDryRun}, {Dimension: DimensionTopology, Verdict: "dryrun"}}}},
		{name: "warn admits and warns", action: EnforceWarn, in: denied(), want: Decision{Allowed: true,
			Warned: []Violation{asAction(deny, EnforceWarn)}, DryRun: []Violation{staged}, Warnings: []string{"QUOTA_CEILING: over the ceiling", "z"},
			Explanations: []Explanation{{Dimension: DimensionQuota, Verdict: EnforceWarn}, {Dimension: DimensionTopology, Verdict: "dryrun"}}}},
		{name: "an allowed decision is untouched", action: EnforceDryRun, in: Decision{Allowed: true}, want: Decision{Allowed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			override(&got, tc.action)
			assert.Equal(t, tc.want, got, "override(%q)", tc.action)
		})
	}
}
