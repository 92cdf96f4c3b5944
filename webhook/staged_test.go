package webhook

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// stagedReviewer decides with the default authority model whose quota
// rules are staged at action.
func stagedReviewer(t *testing.T, action string) *review.Service {
	t.Helper()
	ev := fixtures.Evaluator(t, "staged-"+action, func(model map[string]any) {
		model["enforcement"] = map[string]any{"quota": action}
	})
	r, _ := reviewtest.Service(t)
	r.Decider = ev
	return r
}

// TestStagedEnforcementResponses: the same over-ceiling Job through both
// handlers with its quota rule at each action. Warn shows the violation
// as a warning; dryrun admits it silently and names the code in the audit
// annotations; deny denies.
func TestStagedEnforcementResponses(t *testing.T) {
	const code = "QUOTA_EXCEEDS_CEILING"
	for _, action := range []string{evaluator.EnforceDryRun, evaluator.EnforceWarn, evaluator.EnforceDeny} {
		r := stagedReviewer(t, action)
		for name, h := range map[string]admission.Handler{"mutate": &Mutator{Reviewer: r}, "validate": &Validator{Reviewer: r}} {
			t.Run(action+"/"+name, func(t *testing.T) {
				resp := h.Handle(context.Background(), admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "dave"))
				var coded []string
				for _, w := range resp.Warnings {
					if strings.HasPrefix(w, code+": ") {
						coded = append(coded, w)
					}
				}
				switch action {
				case evaluator.EnforceDryRun:
					require.True(t, resp.Allowed, "result: %+v", resp.Result)
					assert.Empty(t, coded, "a dryrun violation is not shown")
					assert.Equal(t, code, resp.AuditAnnotations[AuditDryRunViolations])
				case evaluator.EnforceWarn:
					require.True(t, resp.Allowed, "result: %+v", resp.Result)
					require.Len(t, coded, 1)
					assert.Contains(t, coded[0], "tenant platform's ceiling is 16")
					assert.NotContains(t, resp.AuditAnnotations, AuditDryRunViolations)
				case evaluator.EnforceDeny:
					require.False(t, resp.Allowed)
					assert.Contains(t, resp.Result.Message, "tenant platform's ceiling is 16")
					assert.NotContains(t, resp.AuditAnnotations, AuditDryRunViolations)
				}
				assert.Equal(t, "staged-"+action, resp.AuditAnnotations[AuditPolicyRevision])
			})
		}
	}
}

func TestAuditAnnotationKeysTakeTheWebhookPrefix(t *testing.T) {
	// The API server records AuditAnnotations as "<webhook name>/<key>"
	// and drops keys that do not make a qualified name that way.
	for _, key := range []string{AuditDecisionID, AuditPolicyRevision, AuditDryRunViolations} {
		for _, webhook := range []string{MutatingWebhookName, ValidatingWebhookName} {
			assert.Empty(t, validation.IsQualifiedName(webhook+"/"+key), key)
		}
	}
}
