package evaluator_test

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestCustomRuleReadsObject: a rule that reads input.object is given the
// raw object, whether it reads it from a module or from the query, though
// the default policies leave it out.
func TestCustomRuleReadsObject(t *testing.T) {
	const custom = `package custom

decision := object.union(data.mandate.decision, {"allowed": false, "violations": [{
	"code": "NAME_FORBIDDEN", "dimension": "tenancy", "enforcement": "deny", "message": input.object.metadata.name,
}]}) if input.object.metadata.name == "forbidden"

decision := data.mandate.decision if input.object.metadata.name != "forbidden"
`
	for _, tc := range []struct {
		name, query string
		module      bool
	}{
		{name: "module", query: "data.custom.decision", module: true},
		{name: "query", query: `[object.union(data.mandate.decision, {"allowed": false, "violations": [{"code": "NAME_FORBIDDEN", ` +
			`"dimension": "tenancy", "enforcement": "deny", "message": "forbidden"}]}), data.mandate.decision]` +
			`[to_number(input.object.metadata.name != "forbidden")]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := evaluator.LoadFS(policies.FS, "custom")
			require.NoError(t, err)
			if tc.module {
				m, err := ast.ParseModuleWithOpts("custom.rego", custom, ast.ParserOptions{RegoVersion: ast.RegoV1})
				require.NoError(t, err)
				p.Modules["custom.rego"] = m
			}
			ev, err := evaluator.New(context.Background(), p, evaluator.Options{Query: tc.query})
			require.NoError(t, err)
			in := fixtures.JobInput("research-vision", 1, 1)

			in.Object = map[string]any{"kind": "Job", "metadata": map[string]any{"name": "forbidden"}}
			d, err := ev.Decide(context.Background(), in)
			require.NoError(t, err)
			assert.False(t, d.Allowed, "the rule read the object's name")

			in.Object = map[string]any{"kind": "Job", "metadata": map[string]any{"name": "fine"}}
			d, err = ev.Decide(context.Background(), in)
			require.NoError(t, err)
			assert.True(t, d.Allowed, "violations: %+v", d.Violations)
		})
	}
}
