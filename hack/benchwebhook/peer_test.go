package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	examplefiles "github.com/mandate-dev/mandate/hack/internal/examples"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
)

const (
	repoExamples  = "../../examples"
	repoModel     = "../../policies/mandate/model/data.json"
	repoReference = "../../evaluator/testdata/reference.rego"
)

// peerQuery prepares the pure-Rego peer as the OPA server runs it: this
// folder's policy, the reference best fit and the cluster facts as data.
func peerQuery(t *testing.T) rego.PreparedEvalQuery {
	t.Helper()
	model, err := readModel(repoModel)
	require.NoError(t, err)
	objs, err := examplefiles.LoadManifests(repoExamples + "/cluster.yaml")
	require.NoError(t, err)
	data, err := opaData(model, objs)
	require.NoError(t, err)
	opts := []func(*rego.Rego){rego.Query("data.system.main"), rego.Store(inmem.NewFromObject(data))}
	for _, f := range []string{"opa/admission.rego", repoReference} {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		opts = append(opts, rego.Module(f, string(src)))
	}
	q, err := rego.New(opts...).PrepareForEval(context.Background())
	require.NoError(t, err)
	return q
}

// peerVerdict is the peer's AdmissionReview response to e.
func peerVerdict(t *testing.T, q rego.PreparedEvalQuery, e example) (allowed bool, message string) {
	t.Helper()
	var in map[string]any
	require.NoError(t, json.Unmarshal(e.withUID("11111111-2222-3333-4444-555555555555"), &in))
	rs, err := q.Eval(context.Background(), rego.EvalInput(in))
	require.NoError(t, err)
	require.Len(t, rs, 1, "%s: data.system.main undefined", e.file)
	raw, err := json.Marshal(rs[0].Expressions[0].Value)
	require.NoError(t, err)
	v, err := parseReview(raw, "11111111-2222-3333-4444-555555555555")
	require.NoError(t, err, "%s: %s", e.file, raw)
	return v.allowed, v.message
}

// mandateVerdicts decides every example in process with Mandate's own
// review path over the example cluster, with the model edited by edit.
func mandateVerdicts(t *testing.T, examples []example, edit func(map[string]any)) map[string]bool {
	t.Helper()
	ev := fixtures.Evaluator(t, "bench", edit)
	state, err := cluster.New(ev.Model())
	require.NoError(t, err)
	require.NoError(t, state.LoadFile(repoExamples+"/cluster.yaml"))
	svc := &review.Service{Decider: ev, State: state}
	out := map[string]bool{}
	for i, e := range examples {
		res, err := svc.Review(context.Background(), e.obj.DeepCopy(), evaluator.Request{
			Operation: "CREATE", User: "bench-user", UID: fmt.Sprintf("uid-%d", i)})
		require.NoError(t, err, e.file)
		out[e.file] = res.Decision.Allowed
	}
	return out
}

// TestPeerAgreesWithMandate: the pure-Rego peer the OPA server runs admits
// and denies every example as Mandate does in process, and as the
// example's file name says; so does Mandate with independent trees.
func TestPeerAgreesWithMandate(t *testing.T) {
	examples, err := loadExamples(repoExamples + "/workloads")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(examples), 8)
	q := peerQuery(t)
	oneTree := mandateVerdicts(t, examples, nil)
	model, err := readModel(repoModel)
	require.NoError(t, err)
	indep, err := independentTrees(model)
	require.NoError(t, err)
	independent := mandateVerdicts(t, examples, func(m map[string]any) { m["tenants"] = indep["tenants"] })
	denied := 0
	for _, e := range examples {
		allowed, msg := peerVerdict(t, q, e)
		require.Equal(t, !e.denied, oneTree[e.file], "%s: Mandate's verdict is not the file name's", e.file)
		require.Equal(t, oneTree[e.file], allowed, "%s: the pure-Rego peer disagrees with Mandate (%s)", e.file, msg)
		require.Equal(t, oneTree[e.file], independent[e.file], "%s: independent trees change Mandate's verdict", e.file)
		if e.denied {
			denied++
			require.Contains(t, msg, e.dimension+":", "%s: the peer denies for another reason", e.file)
		}
	}
	require.Positive(t, denied)
}

// TestIndependentTreesHaveNoParents: every tenant is a root and keeps the
// priority classes it inherited.
func TestIndependentTreesHaveNoParents(t *testing.T) {
	model, err := readModel(repoModel)
	require.NoError(t, err)
	indep, err := independentTrees(model)
	require.NoError(t, err)
	for name, v := range indep["tenants"].(map[string]any) {
		tenant := v.(map[string]any)
		require.Equal(t, "", tenant["parent"], name)
		require.NotEmpty(t, tenant["priorityClasses"], name)
	}
	// The original is untouched.
	require.Equal(t, "research", model["tenants"].(map[string]any)["research-llm"].(map[string]any)["parent"])
}

// TestGatekeeperTemplateDeniesTenancyAndPriority: the ConstraintTemplate's
// Rego, given the review as Gatekeeper gives it (with the namespace
// object) and the constraint's parameters, denies exactly the examples
// denied for tenancy or priority.
func TestGatekeeperTemplateDeniesTenancyAndPriority(t *testing.T) {
	var tmpl struct {
		Spec struct {
			Targets []struct {
				Rego string `json:"rego"`
			} `json:"targets"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(gatekeeperTemplate, &tmpl))
	require.Len(t, tmpl.Spec.Targets, 1)
	q, err := rego.New(rego.Query("data.mandatetenantclass.violation"),
		rego.Module("template.rego", tmpl.Spec.Targets[0].Rego),
		rego.SetRegoVersion(ast.RegoV0)).PrepareForEval(context.Background())
	require.NoError(t, err)
	model, err := readModel(repoModel)
	require.NoError(t, err)
	params, err := gatekeeperParameters(model)
	require.NoError(t, err)
	objs, err := examplefiles.LoadManifests(repoExamples + "/cluster.yaml")
	require.NoError(t, err)
	namespaces := map[string]any{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			namespaces[o.GetName()] = o.Object
		}
	}
	examples, err := loadExamples(repoExamples + "/workloads")
	require.NoError(t, err)
	for _, e := range examples {
		gvk := e.obj.GroupVersionKind()
		review := map[string]any{
			"kind":      map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
			"namespace": e.obj.GetNamespace(),
			"object":    e.obj.Object,
			"operation": "CREATE",
		}
		if ns, ok := namespaces[e.obj.GetNamespace()]; ok {
			review["namespaceObject"] = ns
		}
		rs, err := q.Eval(context.Background(), rego.EvalInput(map[string]any{"review": review, "parameters": params}))
		require.NoError(t, err)
		require.Len(t, rs, 1)
		violations := rs[0].Expressions[0].Value.([]any)
		want := e.expectedDenied([]string{"tenancy", "priority"})
		require.Equal(t, want, len(violations) > 0, "%s: %v", e.file, violations)
		if want {
			require.Contains(t, fmt.Sprint(violations), e.dimension+":", e.file)
		}
	}
}
