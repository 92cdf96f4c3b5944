package webhook

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestAuditAnnotationKeys: the API server records a webhook's audit
// annotation as "<webhook name>/<key>" only when that is a qualified name
// (k8s.io/apiserver admission.checkKeyFormat); any other key is dropped.
func TestAuditAnnotationKeys(t *testing.T) {
	for _, webhook := range []string{MutatingWebhookName, ValidatingWebhookName} {
		for _, key := range []string{AuditDecisionID, AuditPolicyRevision} {
			full := webhook + "/" + key
			if errs := validation.IsQualifiedName(full); len(errs) != 0 {
				t.Errorf("audit annotation %q would be dropped by the API server: %v", full, errs)
			}
		}
	}
}
