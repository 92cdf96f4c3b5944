package placement

import (
	"math/rand/v2"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/topology"
)

// BestFit places a request on the node it leaves with the least free
// resources, as the FGD paper's Best-fit baseline does (its authors'
// simulator, hkust-adsl/kubernetes-scheduler-simulator, plugin
// BestFitScore): a node's leftover is
//
//	½ · (free CPU − requested CPU) / largest node's CPU
//	+ ½ · (free GPU − requested GPU) / largest node's GPUs
//
// with GPUs counted in thousandths summed over the node's GPUs. Like every
// Kubernetes scheduler score it is a whole number from 0 to 100 —
// ⌊100 · (1 − leftover)⌋ — so nodes whose leftovers differ by less than a
// hundredth score alike, and the scheduler draws uniformly among the
// highest. A fractional request then takes the GPU it leaves least free
// (the lowest index among equals); whole GPUs are taken by index.
type BestFit struct {
	rng *rand.Rand
}

var _ Policy = (*BestFit)(nil)

// Place implements Policy.
func (p *BestFit) Place(c *alloc.Cluster, r alloc.Request) (alloc.Binding, bool) {
	return p.PlaceAmong(c, r, nil)
}

// PlaceAmong implements Policy.
func (p *BestFit) PlaceAmong(c *alloc.Cluster, r alloc.Request, nodes []int) (alloc.Binding, bool) {
	best, bestScore, ties := -1, int64(0), 0
	among(c, nodes, func(i int) {
		n := &c.Nodes[i]
		if !n.Fits(r) {
			return
		}
		s := bestFitScore(c, n, r)
		switch {
		case best < 0 || s > bestScore:
			best, bestScore, ties = i, s, 1
		case s == bestScore:
			// Uniform among equals, one pass: the k-th equal replaces
			// the choice with probability 1/k.
			ties++
			if p.rng.IntN(ties) == 0 {
				best = i
			}
		}
	})
	if best < 0 {
		return alloc.Binding{}, false
	}
	return alloc.Binding{Node: best, GPUs: gpusOn(&c.Nodes[best], r, (*alloc.Node).TightestGPU)}, true
}

// bestFitScore is the node's score for r: 100 for a node r leaves empty
// of everything, 0 for one it leaves as free as the largest node.
func bestFitScore(c *alloc.Cluster, n *alloc.Node, r alloc.Request) int64 {
	var leftover float64
	if c.MaxCPUMilli > 0 {
		leftover += float64(n.FreeCPUMilli-r.CPUMilli) / float64(c.MaxCPUMilli) * 0.5
	}
	if c.MaxGPUs > 0 {
		leftover += float64(n.FreeGPUMilliTotal()-r.GPUMilliTotal()) / float64(int64(c.MaxGPUs)*topology.MilliPerGPU) * 0.5
	}
	return int64((1 - leftover) * 100)
}
