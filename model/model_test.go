package model_test

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/policies"
)

func example(t *testing.T) model.Model {
	t.Helper()
	b, err := fs.ReadFile(policies.FS, "mandate/model/data.json")
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	m, err := model.FromData(map[string]any{"mandate": map[string]any{"model": doc}})
	require.NoError(t, err)
	return m
}

// TestDecodeReadsEveryField: the example model, read once, carries every
// part its readers use.
func TestDecodeReadsEveryField(t *testing.T) {
	m := example(t)
	assert.Equal(t, "Helix Labs", m.Org)
	assert.Equal(t, model.Quota{Guaranteed: 128, Ceiling: 160, Products: map[string]model.Limit{
		"NVIDIA-H100-80GB-HBM3": {Guaranteed: 120, Ceiling: 144},
		"NVIDIA-B200":           {Guaranteed: 8, Ceiling: 32},
	}}, m.Tenants["product"].Quota["nvidia.com/gpu"])
	assert.Equal(t, "train", m.ClassDefaults["training"])
	assert.True(t, m.Preemption.GangsWhole)
	assert.Equal(t, []string{"train"}, m.Preemption.MayPreempt["build-preemptible"])
	assert.Equal(t, "helix-fabric", m.Topology.Name)
	require.Len(t, m.Topology.Rules, 5)
	assert.Equal(t, 8, *m.Topology.Rules[0].MaxGPUs)
	assert.Nil(t, m.Topology.Rules[4].MaxGPUs)
	assert.Equal(t, "nvidia.com/gpu.health", m.Topology.Health.Label)
	assert.Equal(t, "deny", m.Enforcement["quota"])
	assert.Equal(t, "preemptible", m.QuotaPolicy.OverGuarantee)
	res, ok := m.DeviceResource("mig.nvidia.com")
	assert.True(t, ok)
	assert.Equal(t, "nvidia.com/mig-1g.10gb", res)
}

// TestTheHierarchysFacts: chains, inherited scheduler and classes, queue
// names and order, each defined once on the model.
func TestTheHierarchysFacts(t *testing.T) {
	m := example(t)
	assert.Equal(t, []string{"research-llm", "research", "helix"}, m.Chain("research-llm"))
	assert.Equal(t, 2, m.Depth("research-llm"))
	assert.Equal(t, "volcano", m.SchedulerOf("research-llm"), "inherited from research")
	assert.Equal(t, "kai", m.SchedulerOf("platform"))
	classes, from, ok := m.AllowedClasses("research-llm")
	assert.True(t, ok)
	assert.Equal(t, "research", from)
	assert.Equal(t, []string{"train", "build-preemptible", "build"}, classes)
	assert.Equal(t, 100, m.MaxTierValue("research-llm"))
	assert.Equal(t, []string{"helix", "platform", "product", "research", "research-llm", "research-vision"}, m.TenantNames(), "parents first")
	assert.Equal(t, []string{"research-llm", "research-vision"}, m.Children("research"))
	assert.Equal(t, "research-llm", m.QueueName("research-llm"))
	assert.True(t, m.OverGuaranteeReclaimable())
	assert.True(t, m.AnyTierPreempts())

	// An empty list allows none; an absent one inherits.
	m.Tenants["research-llm"] = model.Tenant{Parent: "research", PriorityClasses: []string{}}
	classes, from, ok = m.AllowedClasses("research-llm")
	assert.True(t, ok)
	assert.Equal(t, "research-llm", from)
	assert.Empty(t, classes)
	assert.Equal(t, model.DefaultScheduler, model.Model{Tenants: map[string]model.Tenant{"a": {}}}.SchedulerOf("a"))
}

// TestChainsOfAnUnsoundModelEnd: the walks stop at a cycle or an unknown
// parent, for the model checker, which reads models before they are sound.
func TestChainsOfAnUnsoundModelEnd(t *testing.T) {
	m := model.Model{Tenants: map[string]model.Tenant{"a": {Parent: "b"}, "b": {Parent: "a"}, "c": {Parent: "x"}}}
	assert.Equal(t, []string{"a", "b"}, m.Chain("a"))
	_, rooted := m.Ancestry("a")
	assert.False(t, rooted)
	chain, rooted := m.Ancestry("c")
	assert.False(t, rooted)
	assert.Equal(t, []string{"c"}, chain)
	assert.Len(t, m.TenantNames(), 3, "no endless walk")
	assert.ErrorContains(t, m.Usable(), `unknown tenant "x"`)
}

// TestQuotaPerProduct: a tenant's quota per resource and product, and the
// disjoint pools the schedulers get from it.
func TestQuotaPerProduct(t *testing.T) {
	m := example(t)
	l, ok := m.QuotaOf("product", "nvidia.com/gpu", "NVIDIA-B200")
	assert.True(t, ok)
	assert.Equal(t, model.Limit{Guaranteed: 8, Ceiling: 32}, l)
	l, ok = m.QuotaOf("product", "nvidia.com/gpu", "")
	assert.True(t, ok)
	assert.Equal(t, model.Limit{Guaranteed: 128, Ceiling: 160}, l)
	_, ok = m.QuotaOf("platform", "nvidia.com/gpu", "NVIDIA-B200")
	assert.False(t, ok, "no product quota")
	_, ok = m.QuotaOf("research-llm", "nvidia.com/mig-1g.10gb", "")
	assert.False(t, ok, "limited by its ancestors only")
	assert.Equal(t, []string{"NVIDIA-B200", "NVIDIA-H100-80GB-HBM3"}, m.Products("product", "nvidia.com/gpu"))
	assert.Equal(t, []string{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"}, m.Resources("product"))
	assert.Equal(t, []model.Pool{
		{Resource: "nvidia.com/gpu", Guaranteed: 0, Ceiling: 160},
		{Resource: "nvidia.com/gpu", Product: "NVIDIA-B200", Guaranteed: 8, Ceiling: 32},
		{Resource: "nvidia.com/gpu", Product: "NVIDIA-H100-80GB-HBM3", Guaranteed: 120, Ceiling: 144},
		{Resource: "nvidia.com/mig-1g.10gb", Guaranteed: 28, Ceiling: 56},
	}, m.Pools("product"))
}

func TestFromDataRefuses(t *testing.T) {
	_, err := model.FromData(map[string]any{})
	assert.ErrorContains(t, err, "no mandate.model")
	_, err = model.FromData(map[string]any{"mandate": map[string]any{"model": map[string]any{"tenants": "x"}}})
	assert.ErrorContains(t, err, "malformed")
	_, err = model.FromData(map[string]any{"mandate": map[string]any{"model": map[string]any{"tenants": map[string]any{}}}})
	assert.ErrorContains(t, err, "topology.levels is empty")
}
