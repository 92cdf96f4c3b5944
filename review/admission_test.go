package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// request is a CREATE (or, with old, an UPDATE) of a YAML object.
func request(t *testing.T, manifest, old string) review.Request {
	t.Helper()
	obj := reviewtest.Object(t, manifest)
	raw, err := yaml.YAMLToJSON([]byte(manifest))
	require.NoError(t, err)
	req := review.Request{Request: evaluator.Request{Operation: "CREATE", User: "alice", UID: "uid-1"},
		Kind: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: raw}
	if old != "" {
		req.Operation = "UPDATE"
		if req.OldObject, err = yaml.YAMLToJSON([]byte(old)); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

// TestProtocolSteps: which step of the protocol answers a request, and
// which answers carry a decision for metrics and the decision log.
func TestProtocolSteps(t *testing.T) {
	r, rec := reviewtest.Service(t)
	ctx := context.Background()
	seal, err := review.NewSeal()
	require.NoError(t, err)
	gate := review.Gate{Seal: seal}

	denied := r.Admit(ctx, request(t, fixtures.PlatformTooBig, ""), gate)
	assert.Equal(t, review.Denied, denied.Outcome)
	assert.Equal(t, review.StepDecision, denied.Step)
	require.NotNil(t, denied.Decided)
	assert.NotEmpty(t, denied.Violations)
	assert.Contains(t, denied.Reason, "quota")
	assert.Contains(t, denied.Message, "ceiling")
	assert.Equal(t, denied.Decided.Result.Decision.ID, denied.AuditAnnotations[review.AuditDecisionID])

	admitted := r.Admit(ctx, request(t, fixtures.VisionSweep, ""), gate)
	assert.Equal(t, review.Allowed, admitted.Outcome)
	assert.Equal(t, review.StepDecision, admitted.Step)
	require.NotNil(t, admitted.Decided)
	assert.False(t, admitted.Decided.Reinvocation)
	var sealed bool
	for _, op := range admitted.Patch {
		sealed = sealed || op.Path == "/metadata/annotations/mandate.dev~1directives-seal"
	}
	assert.True(t, sealed, "an admitted workload is sealed for the validating webhook")

	exempt := r.Admit(ctx, request(t, fixtures.PlatformTooBig, ""), review.Gate{ExemptNamespaces: []string{"platform"}})
	assert.Equal(t, review.Allowed, exempt.Outcome)
	assert.Equal(t, review.StepNone, exempt.Step)
	assert.Nil(t, exempt.Decided)

	broken := request(t, fixtures.VisionSweep, "")
	broken.Object = []byte("{")
	calls := rec.Calls()
	invalid := r.Validate(ctx, broken, gate)
	assert.Equal(t, review.Invalid, invalid.Outcome)
	assert.ErrorContains(t, invalid.Err, "not a JSON object")
	assert.Equal(t, calls, rec.Calls(), "an unreadable object is never decided")

	update := r.Validate(ctx, request(t, fixtures.VisionSweep, fixtures.VisionSweep), gate)
	assert.Equal(t, review.Allowed, update.Outcome)
	assert.Equal(t, review.StepUpdate, update.Step)
	assert.Equal(t, "not admitted by Mandate", update.Message)
	assert.Nil(t, update.Decided)
}

// TestUpdateMayNotAddDirectives: an UPDATE of a workload Mandate never
// admitted may not add mandate.dev/directives, which the eviction guard,
// the gang-whole controller and the ledger trust: a tenant would mark its
// undecided GPU pods non-preemptible, out of every scheduler's reach.
func TestUpdateMayNotAddDirectives(t *testing.T) {
	r, _ := reviewtest.Service(t)
	old := `
apiVersion: v1
kind: Pod
metadata:
  name: squatter
  namespace: vision
spec:
  priorityClassName: train
  containers:
  - {name: main, image: x, resources: {limits: {nvidia.com/gpu: "8"}}}
`
	marked := strings.Replace(old, "  namespace: vision\n", "  namespace: vision\n  annotations:\n    mandate.dev/directives: '{\"priorityClass\":\"build\",\"preemptible\":false}'\n", 1)
	require.NotEqual(t, old, marked)
	resp := r.Validate(context.Background(), request(t, marked, old), review.Gate{})
	assert.Equal(t, review.Denied, resp.Outcome, "%s", resp.Message)
	assert.Contains(t, resp.Message, "only Mandate records mandate.dev/directives")

	relabelled := strings.Replace(old, "  namespace: vision\n", "  namespace: vision\n  labels: {app: x}\n", 1)
	resp = r.Validate(context.Background(), request(t, relabelled, old), review.Gate{})
	assert.Equal(t, review.Allowed, resp.Outcome, "any other update of it is not Mandate's concern: %s", resp.Message)
}

// TestForgedGangOwnerIsDropped: a pod created with a gang-owner annotation
// its creator wrote (naming another tenant's admitted PyTorchJob) is
// decided on its own, and the patch removes the annotation, so the ledger
// never counts it among that gang's pods.
func TestForgedGangOwnerIsDropped(t *testing.T) {
	r, _ := reviewtest.Service(t)
	seal, err := review.NewSeal()
	require.NoError(t, err)
	const forged = `
apiVersion: v1
kind: Pod
metadata:
  name: squatter
  namespace: vision
  annotations:
    mandate.dev/gang-owner: '{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"llama-finetune","uid":"victim-uid"}'
spec:
  priorityClassName: train
  containers:
  - {name: main, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}
`
	resp := r.Admit(context.Background(), request(t, forged, ""), review.Gate{Seal: seal})
	require.Equal(t, review.Allowed, resp.Outcome, "%s", resp.Message)
	assert.Equal(t, review.StepDecision, resp.Step, "decided on its own, not as a gang pod")
	var removed bool
	for _, op := range resp.Patch {
		removed = removed || (op.Operation == "remove" && op.Path == "/metadata/annotations/mandate.dev~1gang-owner")
	}
	assert.True(t, removed, "the patch removes the forged annotation: %v", resp.Patch)
	require.NotNil(t, resp.Decided)
	assert.NotContains(t, resp.Decided.Result.Mutated.GetAnnotations(), "mandate.dev/gang-owner")
}
