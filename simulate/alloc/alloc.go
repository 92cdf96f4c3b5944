// Package alloc is the node-level allocation of a simulated cluster: each
// node's CPU, memory and GPUs, a GPU divisible into thousandths, and what a
// request fits where. A request takes either a share of one GPU (a
// fractional request) or whole GPUs, all on one node; GPU types restrict
// the nodes a GPU request may use. It decides nothing: a placement policy
// (simulate/placement) chooses among the nodes that fit, and the cluster
// binds and releases what was chosen.
package alloc

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mandate-dev/mandate/topology"
)

// NodeSpec is a node's capacity.
type NodeSpec struct {
	Name      string
	Model     string // GPU type
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
}

// Request is what one pod asks of one node.
type Request struct {
	CPUMilli  int64
	MemoryMiB int64
	// GPUs is the number of GPUs; GPUMilli the thousandths of each. A
	// request of one GPU with GPUMilli below topology.MilliPerGPU shares a GPU;
	// any other GPU request takes whole GPUs.
	GPUs     int
	GPUMilli int64
	// Models are the GPU types a GPU request may use; empty, any.
	Models []string
}

// Fractional says the request takes a share of one GPU.
func (r Request) Fractional() bool { return r.GPUs == 1 && r.GPUMilli < topology.MilliPerGPU }

// GPUMilliTotal is the request's GPU demand in thousandths of a GPU.
func (r Request) GPUMilliTotal() int64 {
	if r.GPUs == 0 {
		return 0
	}
	if r.Fractional() {
		return r.GPUMilli
	}
	return int64(r.GPUs) * topology.MilliPerGPU
}

// Node is one node's capacity and what is free on it.
type Node struct {
	NodeSpec
	FreeCPUMilli  int64
	FreeMemoryMiB int64
	// FreeGPUMilli is each GPU's free thousandths, by device index.
	FreeGPUMilli []int64
	freeGPUTotal int64
	wholeFree    int
}

// FreeGPUMilliTotal is the node's free GPU thousandths, all GPUs summed.
func (n *Node) FreeGPUMilliTotal() int64 { return n.freeGPUTotal }

// WholeFreeGPUs is the number of the node's GPUs nobody holds a share of.
func (n *Node) WholeFreeGPUs() int { return n.wholeFree }

// Allows says the request may use this node's GPU type.
func (n *Node) Allows(r Request) bool {
	return r.GPUs == 0 || len(r.Models) == 0 || slices.Contains(r.Models, n.Model)
}

// Fits says the request fits on the node as it is now: CPU, memory, the
// GPU type, and a GPU with the share free or enough whole free GPUs.
func (n *Node) Fits(r Request) bool {
	if r.CPUMilli > n.FreeCPUMilli || r.MemoryMiB > n.FreeMemoryMiB || !n.Allows(r) {
		return false
	}
	switch {
	case r.GPUs == 0:
		return true
	case r.Fractional():
		if n.wholeFree > 0 {
			return true
		}
		for _, free := range n.FreeGPUMilli {
			if free >= r.GPUMilli {
				return true
			}
		}
		return false
	default:
		return n.wholeFree >= r.GPUs
	}
}

// TightestGPU is the GPU a fractional request leaves least free on: the
// one with the least free thousandths that still hold it, the lowest
// index among equals; -1 when none does.
func (n *Node) TightestGPU(milli int64) int {
	best := -1
	for i, free := range n.FreeGPUMilli {
		if free >= milli && (best < 0 || free < n.FreeGPUMilli[best]) {
			best = i
		}
	}
	return best
}

// FittingGPUs appends to buf the GPUs with at least milli free.
func (n *Node) FittingGPUs(milli int64, buf []int) []int {
	for i, free := range n.FreeGPUMilli {
		if free >= milli {
			buf = append(buf, i)
		}
	}
	return buf
}

// WholeGPUs appends to buf the first count wholly free GPUs, by index.
func (n *Node) WholeGPUs(count int, buf []int) []int {
	for i, free := range n.FreeGPUMilli {
		if count == 0 {
			break
		}
		if free == topology.MilliPerGPU {
			buf = append(buf, i)
			count--
		}
	}
	return buf
}

// Binding is where a request went: the node's index in the cluster and
// the GPUs it holds there (one for a fractional request).
type Binding struct {
	Node int
	GPUs []int
}

// Cluster is the simulated cluster's nodes and their allocation.
type Cluster struct {
	Nodes []Node
	// GPUMilli is all GPUs of the cluster in thousandths.
	GPUMilli int64
	// MaxCPUMilli and MaxGPUs are the largest node's CPU and GPUs: the
	// scale on which a policy weighs what a node has left.
	MaxCPUMilli    int64
	MaxGPUs        int
	allocatedMilli int64
}

// New returns an empty cluster of the nodes.
func New(specs []NodeSpec) (*Cluster, error) {
	c := &Cluster{Nodes: make([]Node, len(specs))}
	for i, s := range specs {
		if s.GPUs < 0 || s.CPUMilli < 0 || s.MemoryMiB < 0 {
			return nil, fmt.Errorf("node %q has a negative capacity", s.Name)
		}
		c.Nodes[i] = Node{NodeSpec: s, FreeGPUMilli: make([]int64, s.GPUs)}
		c.GPUMilli += int64(s.GPUs) * topology.MilliPerGPU
		c.MaxCPUMilli = max(c.MaxCPUMilli, s.CPUMilli)
		c.MaxGPUs = max(c.MaxGPUs, s.GPUs)
	}
	c.Reset()
	return c, nil
}

// Reset frees every node.
func (c *Cluster) Reset() {
	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.FreeCPUMilli, n.FreeMemoryMiB = n.CPUMilli, n.MemoryMiB
		for g := range n.FreeGPUMilli {
			n.FreeGPUMilli[g] = topology.MilliPerGPU
		}
		n.freeGPUTotal = int64(n.GPUs) * topology.MilliPerGPU
		n.wholeFree = n.GPUs
	}
	c.allocatedMilli = 0
}

// AllocatedGPUMilli is the GPU thousandths held, all nodes summed.
func (c *Cluster) AllocatedGPUMilli() int64 { return c.allocatedMilli }

// ErrDoesNotFit is a binding the node cannot hold.
var ErrDoesNotFit = errors.New("does not fit")

// Bind takes the request's resources at b.
func (c *Cluster) Bind(r Request, b Binding) error {
	if b.Node < 0 || b.Node >= len(c.Nodes) {
		return fmt.Errorf("binding to node %d of %d: %w", b.Node, len(c.Nodes), ErrDoesNotFit)
	}
	n := &c.Nodes[b.Node]
	if err := n.check(r, b); err != nil {
		return fmt.Errorf("binding to node %q: %w", n.Name, err)
	}
	n.FreeCPUMilli -= r.CPUMilli
	n.FreeMemoryMiB -= r.MemoryMiB
	per := perGPU(r)
	for _, g := range b.GPUs {
		if n.FreeGPUMilli[g] == topology.MilliPerGPU {
			n.wholeFree--
		}
		n.FreeGPUMilli[g] -= per
	}
	n.freeGPUTotal -= r.GPUMilliTotal()
	c.allocatedMilli += r.GPUMilliTotal()
	return nil
}

// Release gives back what Bind took for the same request and binding.
func (c *Cluster) Release(r Request, b Binding) {
	n := &c.Nodes[b.Node]
	n.FreeCPUMilli += r.CPUMilli
	n.FreeMemoryMiB += r.MemoryMiB
	per := perGPU(r)
	for _, g := range b.GPUs {
		n.FreeGPUMilli[g] += per
		if n.FreeGPUMilli[g] == topology.MilliPerGPU {
			n.wholeFree++
		}
	}
	n.freeGPUTotal += r.GPUMilliTotal()
	c.allocatedMilli -= r.GPUMilliTotal()
}

func perGPU(r Request) int64 {
	if r.Fractional() {
		return r.GPUMilli
	}
	return topology.MilliPerGPU
}

// check says why the binding cannot hold the request, or nil.
func (n *Node) check(r Request, b Binding) error {
	switch {
	case r.CPUMilli > n.FreeCPUMilli:
		return fmt.Errorf("%d CPU milli wanted, %d free: %w", r.CPUMilli, n.FreeCPUMilli, ErrDoesNotFit)
	case r.MemoryMiB > n.FreeMemoryMiB:
		return fmt.Errorf("%d MiB wanted, %d free: %w", r.MemoryMiB, n.FreeMemoryMiB, ErrDoesNotFit)
	case !n.Allows(r):
		return fmt.Errorf("GPU type %s not among %v: %w", n.Model, r.Models, ErrDoesNotFit)
	case len(b.GPUs) != r.GPUs:
		return fmt.Errorf("%d GPUs bound for a request of %d: %w", len(b.GPUs), r.GPUs, ErrDoesNotFit)
	}
	per := perGPU(r)
	for i, g := range b.GPUs {
		if g < 0 || g >= len(n.FreeGPUMilli) || slices.Contains(b.GPUs[:i], g) {
			return fmt.Errorf("GPU %d is not one of the node's %d, or bound twice: %w", g, len(n.FreeGPUMilli), ErrDoesNotFit)
		}
		if n.FreeGPUMilli[g] < per {
			return fmt.Errorf("GPU %d has %d thousandths free, %d wanted: %w", g, n.FreeGPUMilli[g], per, ErrDoesNotFit)
		}
	}
	return nil
}
