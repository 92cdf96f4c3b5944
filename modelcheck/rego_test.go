package modelcheck_test

import (
	"context"
	"fmt"
	"io/fs"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/policies"
)

// evalRego evaluates query with data and input over the shipped modules of
// lib and enforcement (which lib imports).
func evalRego(t *testing.T, query string, data map[string]any, input any) any {
	t.Helper()
	opts := []func(*rego.Rego){rego.Query(query), rego.Store(inmem.NewFromObject(data)), rego.Input(input)}
	for _, module := range []string{"mandate/lib/lib.rego", "mandate/enforcement/enforcement.rego"} {
		src, err := fs.ReadFile(policies.FS, module)
		require.NoError(t, err)
		opts = append(opts, rego.Module(module, string(src)))
	}
	rs, err := rego.New(opts...).Eval(context.Background())
	require.NoError(t, err)
	require.Len(t, rs, 1, "%s is undefined", query)
	return rs[0].Expressions[0].Value
}

// The Rego walk up the hierarchy (mandate.lib.chain, written out tenant by
// tenant) reaches exactly model.MaxDepth tenants: the limit the checker
// enforces and the ledger walks.
func TestRegoChainWalksMaxDepth(t *testing.T) {
	tenants := map[string]any{}
	parent := ""
	for i := 1; i <= model.MaxDepth+1; i++ {
		name := fmt.Sprintf("t%d", i)
		tenants[name] = map[string]any{"parent": parent}
		parent = name
	}
	data := map[string]any{"mandate": map[string]any{"model": map[string]any{"tenants": tenants}}}
	input := func(tenant string) any {
		return map[string]any{"namespace": map[string]any{"labels": map[string]any{"mandate.dev/tenant": tenant}}}
	}

	deepest := fmt.Sprintf("t%d", model.MaxDepth)
	chain := evalRego(t, "data.mandate.lib.chain", data, input(deepest))
	require.Len(t, chain, model.MaxDepth, "a tenant MaxDepth deep sees its whole chain")
	assert.Equal(t, "t1", chain.([]any)[model.MaxDepth-1], "up to the root")

	tooDeep := fmt.Sprintf("t%d", model.MaxDepth+1)
	chain = evalRego(t, "data.mandate.lib.chain", data, input(tooDeep))
	assert.Len(t, chain, model.MaxDepth, "the walk stops at MaxDepth: deeper is what the checker refuses")
}

// The checker's enforcement actions are mandate.enforcement's.
func TestActionsAreTheRegoActions(t *testing.T) {
	actions := evalRego(t, "data.mandate.enforcement.actions", map[string]any{}, nil)
	want := make([]any, len(modelcheck.Actions))
	for i, a := range modelcheck.Actions {
		want[i] = a
	}
	assert.ElementsMatch(t, want, actions)
}

// The borrowed class is named alike by Rego (mandate.lib.borrowed_class,
// which the directives give) and Go (model.BorrowedClass, which sync
// renders as a PriorityClass): a pod must never name a class sync did not
// make.
func TestBorrowedClassAgrees(t *testing.T) {
	got := evalRego(t, `data.mandate.lib.borrowed_class("build")`, map[string]any{}, map[string]any{})
	assert.Equal(t, model.BorrowedClass("build"), got)
}
