package evaluator

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/policies"
)

func TestReadsObject(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		want       bool
	}{
		{"workload fields only", `x if input.workload.kind == "Job"`, false},
		{"request and namespace", `x if { input.request.user == "a"; input.namespace.labels.t }`, false},
		{"the object", `x if input.object.spec.parallelism > 2`, true},
		{"the object by brackets", `x if input["object"].metadata`, true},
		{"indexed by a variable", `x if { some k; input[k].spec }`, true},
		{"input whole", `x := json.marshal(input)`, true},
		{"input walked", `x if walk(input, [p, v])`, true},
		{"input imported", "import input.object as o\nx if o.spec", true},
		{"input nested in an index", `x if data.d[input.object.kind]`, true},
		{"object.get of another key", `x := object.get(input, ["usage", "t"], 0)`, false},
		{"object.get of another key, nested", `x := {"u": object.get(input, "usage", 0)}`, false},
		{"object.get of the object", `x := object.get(input, ["object", "spec"], 0)`, true},
		{"object.get by a variable key", `x if { some k in ["a"]; object.get(input, [k], 0) }`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ast.ParseModuleWithOpts("p.rego", "package p\n"+tc.rule, ast.ParserOptions{RegoVersion: ast.RegoV1})
			require.NoError(t, err)
			modules := map[string]*ast.Module{"p.rego": m}
			c := ast.NewCompiler()
			c.Compile(modules)
			require.False(t, c.Failed(), "%v", c.Errors)
			assert.Equal(t, tc.want, readsObject(modules))
		})
	}
	t.Run("the default policies", func(t *testing.T) {
		p, err := LoadFS(policies.FS, "test")
		require.NoError(t, err)
		assert.False(t, readsObject(p.Modules), "the default policies read no raw object; if one does now, this is the place to say it costs")
	})
}
