package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/stretchr/testify/require"

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

// exampleFacts are the cluster facts both peers are given: the example
// model and cluster, as the bench builds them (opaData).
func exampleFacts(t *testing.T) map[string]any {
	t.Helper()
	model, err := readModel(repoModel)
	require.NoError(t, err)
	objs, err := examplefiles.LoadManifests(repoExamples + "/cluster.yaml")
	require.NoError(t, err)
	facts, err := opaData(model, objs)
	require.NoError(t, err)
	return facts
}

// peerQuery prepares the pure-Rego peer as the OPA server runs it: this
// folder's policy, the reference best fit and the cluster facts as data.
func peerQuery(t *testing.T) rego.PreparedEvalQuery {
	t.Helper()
	data := exampleFacts(t)
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
	require.NoError(t, json.Unmarshal(e.request("11111111-2222-3333-4444-555555555555", e.obj.GetName()), &in))
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

// gatekeeperQuery prepares the policy's template as Gatekeeper compiles it
// (its entry point and libraries, in the source's Rego version, data
// references checked against Gatekeeper's rule): the query of its
// violations.
func gatekeeperQuery(t *testing.T, p gatekeeperPolicy) rego.PreparedEvalQuery {
	t.Helper()
	mods, err := p.modules()
	require.NoError(t, err)
	opts := []func(*rego.Rego){rego.Query(mods["template"].Package.Path.String() + ".violation")}
	for _, m := range mods {
		opts = append(opts, rego.ParsedModule(m))
	}
	q, err := rego.New(opts...).PrepareForEval(context.Background())
	require.NoError(t, err)
	return q
}

// gatekeeperInput is what Gatekeeper's hook gives a template for e:
// {"review": the AdmissionRequest with the namespace object,
// "parameters": the constraint's parameters}, the parameters as they come
// back from the API server (JSON).
func gatekeeperInput(t *testing.T, e example, namespaces map[string]any, params map[string]any) map[string]any {
	t.Helper()
	var body struct {
		Request map[string]any `json:"request"`
	}
	require.NoError(t, json.Unmarshal(e.request("11111111-2222-3333-4444-555555555555", e.obj.GetName()), &body))
	if ns, ok := namespaces[e.obj.GetNamespace()]; ok {
		body.Request["namespaceObject"] = ns
	}
	raw, err := json.Marshal(params)
	require.NoError(t, err)
	var fromAPI map[string]any
	require.NoError(t, json.Unmarshal(raw, &fromAPI))
	return map[string]any{"review": body.Request, "parameters": fromAPI}
}

// gatekeeperViolations are the messages of the template's violations for e.
func gatekeeperViolations(t *testing.T, q rego.PreparedEvalQuery, in map[string]any, file string) []string {
	t.Helper()
	rs, err := q.Eval(context.Background(), rego.EvalInput(in))
	require.NoError(t, err, file)
	require.Len(t, rs, 1, file)
	var msgs []string
	for _, v := range rs[0].Expressions[0].Value.([]any) {
		msgs = append(msgs, v.(map[string]any)["msg"].(string))
	}
	sort.Strings(msgs)
	return msgs
}

func exampleNamespaces(t *testing.T) map[string]any {
	t.Helper()
	objs, err := examplefiles.LoadManifests(repoExamples + "/cluster.yaml")
	require.NoError(t, err)
	namespaces := map[string]any{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			namespaces[o.GetName()] = o.Object
		}
	}
	return namespaces
}

// TestGatekeeperTemplateDeniesTenancyAndPriority: the light
// ConstraintTemplate's Rego (gatekeeper-light), given the review as
// Gatekeeper gives it (with the namespace object) and the constraint's
// parameters, denies exactly the examples denied for tenancy or priority.
func TestGatekeeperTemplateDeniesTenancyAndPriority(t *testing.T) {
	model, err := readModel(repoModel)
	require.NoError(t, err)
	p, err := lightGatekeeperPolicy(model)
	require.NoError(t, err)
	q := gatekeeperQuery(t, p)
	namespaces := exampleNamespaces(t)
	examples, err := loadExamples(repoExamples + "/workloads")
	require.NoError(t, err)
	for _, e := range examples {
		violations := gatekeeperViolations(t, q, gatekeeperInput(t, e, namespaces, p.parameters), e.file)
		want := e.expectedDenied([]string{"tenancy", "priority"})
		require.Equal(t, want, len(violations) > 0, "%s: %v", e.file, violations)
		if want {
			require.Contains(t, fmt.Sprint(violations), e.dimension+":", e.file)
		}
	}
}

// TestGatekeeperFullTemplateAgreesWithMandate: the full ConstraintTemplate
// (gatekeeper), built as the bench builds it from the OPA peer's files and
// given the OPA peer's facts as parameters, denies and admits every
// example as Mandate does in process, with exactly the OPA peer's reasons.
func TestGatekeeperFullTemplateAgreesWithMandate(t *testing.T) {
	facts := exampleFacts(t)
	p, err := fullGatekeeperPolicy("opa/admission.rego", repoReference, facts)
	require.NoError(t, err)
	// The bench sends the template and constraint through a client, which
	// copies them: only JSON values may be in them.
	require.NotPanics(t, func() { p.template.DeepCopy(); p.constraint().DeepCopy() })
	q := gatekeeperQuery(t, p)
	peer := peerQuery(t)
	namespaces := exampleNamespaces(t)
	examples, err := loadExamples(repoExamples + "/workloads")
	require.NoError(t, err)
	mandate := mandateVerdicts(t, examples, nil)
	denied := 0
	for _, e := range examples {
		violations := gatekeeperViolations(t, q, gatekeeperInput(t, e, namespaces, p.parameters), e.file)
		require.Equal(t, mandate[e.file], len(violations) == 0, "%s: Gatekeeper's template disagrees with Mandate: %v", e.file, violations)
		peerAllowed, peerMsg := peerVerdict(t, peer, e)
		require.Equal(t, peerAllowed, len(violations) == 0, e.file)
		if !peerAllowed {
			denied++
			require.Equal(t, peerMsg, strings.Join(violations, "; "), "%s: Gatekeeper's reasons are not the OPA peer's", e.file)
			require.Contains(t, peerMsg, e.dimension+":", e.file)
		}
	}
	require.Positive(t, denied)
}

// TestGatekeeperLibsAreTheSharedRego: the full template's libraries are
// the OPA peer's policy and the reference best fit with only their package
// and data references moved below data.lib.mandate, and Gatekeeper's rule
// (no data outside data.lib and data.inventory) rejects the files as they
// are.
func TestGatekeeperLibsAreTheSharedRego(t *testing.T) {
	for _, path := range []string{"opa/admission.rego", repoReference} {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		lib, err := gatekeeperLib(path, string(src))
		require.NoError(t, err)
		orig := ast.MustParseModuleWithOpts(string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
		moved := ast.MustParseModuleWithOpts(lib, ast.ParserOptions{RegoVersion: ast.RegoV1})
		require.Equal(t, "data.lib.mandate."+strings.TrimPrefix(orig.Package.Path.String(), "data."), moved.Package.Path.String(), path)
		require.Equal(t, len(orig.Rules), len(moved.Rules), path)
		// Moving the references back gives the original rules.
		for i, r := range moved.Rules {
			ast.WalkTerms(r, func(t *ast.Term) bool {
				if ref, ok := t.Value.(ast.Ref); ok && ref.HasPrefix(gatekeeperLibRoot) {
					t.Value = ast.DefaultRootRef.Concat(ref[len(gatekeeperLibRoot):])
				}
				return false
			})
			require.True(t, orig.Rules[i].Equal(r), "%s: rule %d differs:\n%v\n%v", path, i, orig.Rules[i], r)
		}
		require.Error(t, checkGatekeeperRefs(map[string]*ast.Module{path: orig}, []string{path}), path)
		moved = ast.MustParseModuleWithOpts(lib, ast.ParserOptions{RegoVersion: ast.RegoV1})
		require.NoError(t, checkGatekeeperRefs(map[string]*ast.Module{path: moved}, []string{path}), path)
	}
}
