package placement

import (
	"math/rand/v2"

	"github.com/mandate-dev/mandate/simulate/alloc"
)

// Random places a request on a node drawn uniformly among those it fits
// (the FGD paper's Random-fit); a fractional request takes a GPU drawn
// uniformly among the node's GPUs that hold it, whole GPUs are taken by
// index.
type Random struct {
	rng *rand.Rand
	buf []int
}

var _ Policy = (*Random)(nil)

// Place implements Policy.
func (p *Random) Place(c *alloc.Cluster, r alloc.Request) (alloc.Binding, bool) {
	return p.PlaceAmong(c, r, nil)
}

// PlaceAmong implements Policy.
func (p *Random) PlaceAmong(c *alloc.Cluster, r alloc.Request, nodes []int) (alloc.Binding, bool) {
	chosen, fitting := -1, 0
	among(c, nodes, func(i int) {
		if !c.Nodes[i].Fits(r) {
			return
		}
		fitting++
		if p.rng.IntN(fitting) == 0 {
			chosen = i
		}
	})
	if chosen < 0 {
		return alloc.Binding{}, false
	}
	return alloc.Binding{Node: chosen, GPUs: gpusOn(&c.Nodes[chosen], r, p.anyGPU)}, true
}

// anyGPU draws one of the node's GPUs with milli free.
func (p *Random) anyGPU(n *alloc.Node, milli int64) int {
	p.buf = n.FittingGPUs(milli, p.buf[:0])
	return p.buf[p.rng.IntN(len(p.buf))]
}
