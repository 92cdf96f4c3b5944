package evaluator_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/mandate-dev/mandate/evaluator" // mandate.placement, which mandate.topology calls
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/topology"
)

// A pool's node selector is the same in Rego (mandate.topology.
// pool_selector, which the directives render) and Go
// (model.Model.PoolSelector, which the cluster model, sync and simulate
// read): the pods go where the placement was decided.
func TestPoolSelectorAgrees(t *testing.T) {
	m := model.Model{Topology: model.Topology{
		Levels: []topology.Level{{Name: "block", NodeLabel: "example.com/block"}, {Name: "node", NodeLabel: "kubernetes.io/hostname"}},
		Pools: map[string]model.NodePool{
			"blocks":  {Level: "block", Domains: []string{"b2", "b1"}},
			"serving": {NodeLabels: map[string]string{"example.com/pool": "serving", "example.com/tier": "a"}},
			"both":    {Level: "block", Domains: []string{"b1"}, NodeLabels: map[string]string{"example.com/pool": "serving"}},
		},
	}}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	store := inmem.NewFromObject(map[string]any{"mandate": map[string]any{"model": doc}})
	opts := []func(*rego.Rego){rego.Store(store)}
	for _, module := range []string{"mandate/lib/lib.rego", "mandate/enforcement/enforcement.rego", "mandate/topology/topology.rego"} {
		src, err := fs.ReadFile(policies.FS, module)
		require.NoError(t, err)
		opts = append(opts, rego.Module(module, string(src)))
	}
	for _, name := range m.PoolNames() {
		rs, err := rego.New(append(opts, rego.Query(`x := data.mandate.topology.pool_selector(`+string(mustJSON(t, name))+`)`))...).Eval(context.Background())
		require.NoError(t, err)
		require.Len(t, rs, 1, "pool %s", name)
		got := map[string][]string{}
		b, err := json.Marshal(rs[0].Bindings["x"])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &got))
		want, ok := m.PoolSelector(name)
		require.True(t, ok)
		assert.Equal(t, map[string][]string(want), got, "pool %s", name)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
