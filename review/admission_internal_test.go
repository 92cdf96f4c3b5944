package review

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/evaluator"
)

func TestAuditAnnotations(t *testing.T) {
	d := evaluator.Decision{ID: "id", Revision: "r", DryRun: []evaluator.Violation{{Code: "A"}, {Code: "B"}}}
	assert.Equal(t, map[string]string{AuditDecisionID: "id", AuditPolicyRevision: "r", AuditDryRunViolations: "A,B"}, auditAnnotations(d))
	assert.Equal(t, map[string]string{AuditDecisionID: "id", AuditPolicyRevision: "r"}, auditAnnotations(evaluator.Decision{ID: "id", Revision: "r"}))
}
