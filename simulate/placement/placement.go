// Package placement holds the placement policies of the simulator: given
// the simulated cluster (simulate/alloc) and one request, which node that
// fits takes it and which GPUs there. Policies are registered once, by
// name, in one table (Policies); the simulator and the command line look
// them up there. Best-fit and random-fit are the baselines of the FGD paper
// (Weng et al., USENIX ATC'23); Mandate's topology placement is meant to
// become another entry.
package placement

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/mandate-dev/mandate/simulate/alloc"
)

// Policy chooses where one request goes.
type Policy interface {
	// Place returns a binding of r on a node that fits it, false when no
	// node does. It does not bind.
	Place(c *alloc.Cluster, r alloc.Request) (alloc.Binding, bool)
	// PlaceAmong is Place on the nodes of c with the given indexes only
	// (one topology domain); nil is every node.
	PlaceAmong(c *alloc.Cluster, r alloc.Request, nodes []int) (alloc.Binding, bool)
}

// among calls f with the index of every node of c in nodes (every node
// when nodes is nil), in order.
func among(c *alloc.Cluster, nodes []int, f func(i int)) {
	if nodes == nil {
		for i := range c.Nodes {
			f(i)
		}
		return
	}
	for _, i := range nodes {
		f(i)
	}
}

// Registration is one policy: its name, what it does, and how to make it
// with the random source its choices among equals draw on.
type Registration struct {
	Name string
	Help string
	New  func(rng *rand.Rand) Policy
}

// Policies is every placement policy, by name.
var Policies = []Registration{
	{
		Name: "best-fit",
		Help: "the node the task leaves with the least free CPU and GPU (the paper's Best-fit); a share takes the GPU it leaves least free",
		New:  func(rng *rand.Rand) Policy { return &BestFit{rng: rng} },
	},
	{
		Name: "random",
		Help: "a node drawn uniformly among those that fit (Random-fit); a share takes a GPU drawn among those that hold it",
		New:  func(rng *rand.Rand) Policy { return &Random{rng: rng} },
	},
}

// Names lists the registered policies.
func Names() []string {
	names := make([]string, len(Policies))
	for i, p := range Policies {
		names[i] = p.Name
	}
	return names
}

// Lookup finds the named policy's registration.
func Lookup(name string) (Registration, error) {
	for _, p := range Policies {
		if p.Name == name {
			return p, nil
		}
	}
	return Registration{}, fmt.Errorf("unknown placement policy %q, want one of %s", name, strings.Join(Names(), ", "))
}

// New makes the named policy drawing on rng.
func New(name string, rng *rand.Rand) (Policy, error) {
	p, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return p.New(rng), nil
}

// gpusOn picks the GPUs of node n for r: for a fractional request, the one
// pick chooses among those that hold it; whole GPUs by device index.
func gpusOn(n *alloc.Node, r alloc.Request, pick func(*alloc.Node, int64) int) []int {
	switch {
	case r.GPUs == 0:
		return nil
	case r.Fractional():
		return []int{pick(n, r.GPUMilli)}
	default:
		return n.WholeGPUs(r.GPUs, make([]int, 0, r.GPUs))
	}
}
