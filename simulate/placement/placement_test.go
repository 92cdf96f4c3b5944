package placement

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/simulate/alloc"
)

func cluster(t *testing.T, specs ...alloc.NodeSpec) *alloc.Cluster {
	t.Helper()
	c, err := alloc.New(specs)
	require.NoError(t, err)
	return c
}

func TestRegistry(t *testing.T) {
	assert.Equal(t, []string{"best-fit", "random"}, Names())
	for _, name := range Names() {
		p, err := New(name, rand.New(rand.NewPCG(1, 2)))
		require.NoError(t, err)
		assert.NotNil(t, p)
	}
	_, err := New("first-fit", nil)
	assert.EqualError(t, err, `unknown placement policy "first-fit", want one of best-fit, random`)
}

// TestBestFitScore checks the score by hand on a cluster whose largest
// node has 128 CPUs and 8 GPUs (the paper's scale).
func TestBestFitScore(t *testing.T) {
	c := cluster(t,
		alloc.NodeSpec{Name: "big", CPUMilli: 128000, MemoryMiB: 1 << 20, GPUs: 8},
		alloc.NodeSpec{Name: "small", CPUMilli: 32000, MemoryMiB: 1 << 17, GPUs: 2},
	)
	for _, tc := range []struct {
		name string
		node int
		r    alloc.Request
		want int64
	}{
		// Leftover ½·(128−0)/128 + ½·(8000−0)/8000 = 1: score 0.
		{"nothing on the largest node", 0, alloc.Request{}, 0},
		// ½·0 + ½·0 = 0: score 100.
		{"the largest node filled", 0, alloc.Request{CPUMilli: 128000, GPUs: 8, GPUMilli: 1000}, 100},
		// ½·(32−8)/128 + ½·(2000−500)/8000 = 0.09375 + 0.09375 = 0.1875:
		// ⌊81.25⌋ = 81.
		{"a share on the small node", 1, alloc.Request{CPUMilli: 8000, GPUs: 1, GPUMilli: 500}, 81},
		// ½·(32−32)/128 + ½·(2000−0)/8000 = 0.125: ⌊87.5⌋ = 87.
		{"all CPUs of the small node", 1, alloc.Request{CPUMilli: 32000}, 87},
	} {
		assert.Equal(t, tc.want, bestFitScore(c, &c.Nodes[tc.node], tc.r), tc.name)
	}
}

// TestBestFitChoosesTheTightestNode: of three nodes the request fits two;
// it goes to the one it leaves with least free, on the GPU it leaves
// least free; when none fits, nowhere.
func TestBestFitChoosesTheTightestNode(t *testing.T) {
	c := cluster(t,
		alloc.NodeSpec{Name: "full", Model: "T4", CPUMilli: 128000, MemoryMiB: 1 << 20, GPUs: 8},
		alloc.NodeSpec{Name: "roomy", Model: "T4", CPUMilli: 128000, MemoryMiB: 1 << 20, GPUs: 8},
		alloc.NodeSpec{Name: "snug", Model: "T4", CPUMilli: 128000, MemoryMiB: 1 << 20, GPUs: 8},
	)
	whole := alloc.Request{GPUs: 1, GPUMilli: 1000}
	for g := range 8 {
		require.NoError(t, c.Bind(alloc.Request{GPUs: 1, GPUMilli: 900}, alloc.Binding{Node: 0, GPUs: []int{g}}))
	}
	// snug: GPUs 0–5 whole-held, GPU 6 holds 600, GPU 7 free.
	for g := range 6 {
		require.NoError(t, c.Bind(whole, alloc.Binding{Node: 2, GPUs: []int{g}}))
	}
	require.NoError(t, c.Bind(alloc.Request{GPUs: 1, GPUMilli: 600}, alloc.Binding{Node: 2, GPUs: []int{6}}))

	p, err := New("best-fit", rand.New(rand.NewPCG(7, 7)))
	require.NoError(t, err)
	// 300 fits everywhere but "full" (100 free per GPU): snug is left with
	// 1400 − 300 = 1100 GPU thousandths free, roomy with 7700; on snug, GPU 6 (400 free)
	// is tighter than GPU 7.
	b, ok := p.Place(c, alloc.Request{CPUMilli: 1000, GPUs: 1, GPUMilli: 300})
	require.True(t, ok)
	assert.Equal(t, alloc.Binding{Node: 2, GPUs: []int{6}}, b)
	// Two whole GPUs fit only roomy.
	b, ok = p.Place(c, alloc.Request{GPUs: 2, GPUMilli: 1000})
	require.True(t, ok)
	assert.Equal(t, alloc.Binding{Node: 1, GPUs: []int{0, 1}}, b)
	// Nine GPUs fit nowhere.
	_, ok = p.Place(c, alloc.Request{GPUs: 9, GPUMilli: 1000})
	assert.False(t, ok)
}

// TestBestFitDrawsAmongEqualScores: two identical empty nodes score alike,
// and the draw takes each about half the time.
func TestBestFitDrawsAmongEqualScores(t *testing.T) {
	c := cluster(t,
		alloc.NodeSpec{Name: "a", CPUMilli: 64000, MemoryMiB: 1 << 18, GPUs: 4},
		alloc.NodeSpec{Name: "b", CPUMilli: 64000, MemoryMiB: 1 << 18, GPUs: 4},
	)
	p, err := New("best-fit", rand.New(rand.NewPCG(42, 2)))
	require.NoError(t, err)
	chosen := [2]int{}
	for range 1000 {
		b, ok := p.Place(c, alloc.Request{CPUMilli: 1000, GPUs: 1, GPUMilli: 500})
		require.True(t, ok)
		chosen[b.Node]++
	}
	assert.InDelta(t, 500, chosen[0], 100, "node a chosen %d times of 1000", chosen[0])
}

// TestRandomFitsOnlyWhereItFits: random-fit never picks a node that cannot
// hold the request, reaches every node that can, and draws the GPU among
// those that hold a share.
func TestRandomFitsOnlyWhereItFits(t *testing.T) {
	c := cluster(t,
		alloc.NodeSpec{Name: "a10", Model: "A10", CPUMilli: 64000, MemoryMiB: 1 << 18, GPUs: 2},
		alloc.NodeSpec{Name: "t4-a", Model: "T4", CPUMilli: 64000, MemoryMiB: 1 << 18, GPUs: 2},
		alloc.NodeSpec{Name: "t4-small", Model: "T4", CPUMilli: 1000, MemoryMiB: 1 << 18, GPUs: 2},
		alloc.NodeSpec{Name: "t4-b", Model: "T4", CPUMilli: 64000, MemoryMiB: 1 << 18, GPUs: 2},
	)
	require.NoError(t, c.Bind(alloc.Request{GPUs: 1, GPUMilli: 800}, alloc.Binding{Node: 3, GPUs: []int{0}}))
	p, err := New("random", rand.New(rand.NewPCG(42, 2)))
	require.NoError(t, err)
	r := alloc.Request{CPUMilli: 2000, GPUs: 1, GPUMilli: 200, Models: []string{"T4"}}
	nodes, gpus := map[int]int{}, map[int]int{}
	for range 1000 {
		b, ok := p.Place(c, r)
		require.True(t, ok)
		nodes[b.Node]++
		if b.Node == 3 {
			gpus[b.GPUs[0]]++
		}
	}
	assert.Equal(t, []int{1, 3}, sortedKeys(nodes), "only the T4 nodes with CPUs to spare")
	assert.InDelta(t, 500, nodes[1], 100)
	assert.Equal(t, []int{0, 1}, sortedKeys(gpus), "both GPUs of t4-b hold 200")
	_, ok := p.Place(c, alloc.Request{GPUs: 1, GPUMilli: 200, Models: []string{"H100"}})
	assert.False(t, ok)
}

func sortedKeys(m map[int]int) []int {
	var keys []int
	for k := range 8 {
		if m[k] > 0 {
			keys = append(keys, k)
		}
	}
	return keys
}
