package alloc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func twoNodes(t *testing.T) *Cluster {
	t.Helper()
	c, err := New([]NodeSpec{
		{Name: "t4", Model: "T4", CPUMilli: 16000, MemoryMiB: 65536, GPUs: 2},
		{Name: "v100", Model: "V100M32", CPUMilli: 96000, MemoryMiB: 393216, GPUs: 8},
	})
	require.NoError(t, err)
	return c
}

func TestNewCluster(t *testing.T) {
	c := twoNodes(t)
	assert.Equal(t, int64(10_000), c.GPUMilli)
	assert.Equal(t, int64(96000), c.MaxCPUMilli)
	assert.Equal(t, 8, c.MaxGPUs)
	assert.Equal(t, int64(2000), c.Nodes[0].FreeGPUMilliTotal())
	assert.Equal(t, 2, c.Nodes[0].WholeFreeGPUs())
	_, err := New([]NodeSpec{{Name: "bad", GPUs: -1}})
	assert.ErrorContains(t, err, `node "bad" has a negative capacity`)
}

func TestRequestDemand(t *testing.T) {
	for _, tc := range []struct {
		r              Request
		wantFractional bool
		wantMilli      int64
	}{
		{Request{CPUMilli: 4000}, false, 0},
		{Request{GPUs: 1, GPUMilli: 460}, true, 460},
		{Request{GPUs: 1, GPUMilli: 1000}, false, 1000},
		{Request{GPUs: 4, GPUMilli: 1000}, false, 4000},
	} {
		assert.Equal(t, tc.wantFractional, tc.r.Fractional(), "%+v", tc.r)
		assert.Equal(t, tc.wantMilli, tc.r.GPUMilliTotal(), "%+v", tc.r)
	}
}

// TestFits walks one node through CPU, memory, GPU type, shares and whole
// GPUs.
func TestFits(t *testing.T) {
	c := twoNodes(t)
	t4 := &c.Nodes[0]
	for _, tc := range []struct {
		name string
		r    Request
		want bool
	}{
		{"CPU only", Request{CPUMilli: 16000, MemoryMiB: 65536}, true},
		{"too much CPU", Request{CPUMilli: 16001}, false},
		{"too much memory", Request{MemoryMiB: 65537}, false},
		{"a share", Request{GPUs: 1, GPUMilli: 500}, true},
		{"both GPUs", Request{GPUs: 2, GPUMilli: 1000}, true},
		{"three GPUs", Request{GPUs: 3, GPUMilli: 1000}, false},
		{"allowed type", Request{GPUs: 1, GPUMilli: 1000, Models: []string{"P100", "T4"}}, true},
		{"other type", Request{GPUs: 1, GPUMilli: 1000, Models: []string{"V100M32"}}, false},
		{"types do not bind a CPU-only pod", Request{CPUMilli: 1000, Models: []string{"V100M32"}}, true},
	} {
		assert.Equal(t, tc.want, t4.Fits(tc.r), tc.name)
	}

	// A share of 700 on GPU 0 leaves 300 there and GPU 1 whole.
	share := Request{CPUMilli: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 700}
	require.NoError(t, c.Bind(share, Binding{Node: 0, GPUs: []int{0}}))
	assert.Equal(t, []int64{300, 1000}, t4.FreeGPUMilli)
	assert.Equal(t, int64(1300), t4.FreeGPUMilliTotal())
	assert.Equal(t, 1, t4.WholeFreeGPUs())
	assert.Equal(t, int64(700), c.AllocatedGPUMilli())
	assert.True(t, t4.Fits(Request{GPUs: 1, GPUMilli: 300}), "300 fit on GPU 0")
	assert.False(t, t4.Fits(Request{GPUs: 2, GPUMilli: 1000}), "one whole GPU is left, not two")
	assert.Equal(t, 0, t4.TightestGPU(300), "GPU 0 holds 300 exactly")
	assert.Equal(t, 1, t4.TightestGPU(301), "only GPU 1 holds 301")
	assert.Equal(t, []int{0, 1}, t4.FittingGPUs(200, nil))
	assert.Equal(t, []int{1}, t4.WholeGPUs(2, nil), "only GPU 1 is whole")

	// A second share fills GPU 1 to 800 left; a third of 300 fits on
	// either, and nothing of 900 fits.
	require.NoError(t, c.Bind(Request{GPUs: 1, GPUMilli: 200}, Binding{Node: 0, GPUs: []int{1}}))
	assert.Equal(t, 0, t4.WholeFreeGPUs())
	assert.False(t, t4.Fits(Request{GPUs: 1, GPUMilli: 900}))
	assert.Equal(t, -1, t4.TightestGPU(900))

	c.Release(share, Binding{Node: 0, GPUs: []int{0}})
	assert.Equal(t, []int64{1000, 800}, t4.FreeGPUMilli)
	assert.Equal(t, 1, t4.WholeFreeGPUs())
	assert.Equal(t, int64(16000), t4.FreeCPUMilli)
	assert.Equal(t, int64(200), c.AllocatedGPUMilli())

	c.Reset()
	assert.Equal(t, []int64{1000, 1000}, t4.FreeGPUMilli)
	assert.Equal(t, int64(0), c.AllocatedGPUMilli())
}

// TestBindRefusesWhatDoesNotFit: a binding the node cannot hold changes
// nothing and says why.
func TestBindRefusesWhatDoesNotFit(t *testing.T) {
	c := twoNodes(t)
	require.NoError(t, c.Bind(Request{GPUs: 1, GPUMilli: 600}, Binding{Node: 0, GPUs: []int{0}}))
	for _, tc := range []struct {
		name    string
		r       Request
		b       Binding
		wantErr string
	}{
		{"no such node", Request{}, Binding{Node: 2}, "binding to node 2 of 2"},
		{"CPU", Request{CPUMilli: 17000}, Binding{Node: 0}, "17000 CPU milli wanted, 16000 free"},
		{"memory", Request{MemoryMiB: 70000}, Binding{Node: 0}, "70000 MiB wanted, 65536 free"},
		{"type", Request{GPUs: 1, GPUMilli: 1000, Models: []string{"A10"}}, Binding{Node: 0, GPUs: []int{1}}, "GPU type T4 not among [A10]"},
		{"GPU count", Request{GPUs: 2, GPUMilli: 1000}, Binding{Node: 1, GPUs: []int{1}}, "1 GPUs bound for a request of 2"},
		{"GPU twice", Request{GPUs: 2, GPUMilli: 1000}, Binding{Node: 1, GPUs: []int{1, 1}}, "bound twice"},
		{"no such GPU", Request{GPUs: 1, GPUMilli: 1000}, Binding{Node: 0, GPUs: []int{2}}, "GPU 2 is not one of the node's 2"},
		{"share too big", Request{GPUs: 1, GPUMilli: 500}, Binding{Node: 0, GPUs: []int{0}}, "GPU 0 has 400 thousandths free, 500 wanted"},
		{"whole GPU held in part", Request{GPUs: 1, GPUMilli: 1000}, Binding{Node: 0, GPUs: []int{0}}, "GPU 0 has 400 thousandths free, 1000 wanted"},
	} {
		err := c.Bind(tc.r, tc.b)
		require.ErrorIs(t, err, ErrDoesNotFit, tc.name)
		assert.ErrorContains(t, err, tc.wantErr, tc.name)
	}
	assert.Equal(t, []int64{400, 1000}, c.Nodes[0].FreeGPUMilli)
	assert.Equal(t, int64(600), c.AllocatedGPUMilli())
}
