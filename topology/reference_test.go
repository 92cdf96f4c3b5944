package topology_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/topology"
)

// TestPlaceMatchesExhaustiveReference checks Place against a brute-force
// reference on many random small clusters. The reference shares no code with
// the model: it finds domains from raw node labels and decides fit by
// backtracking over assignments of pods to nodes.
func TestPlaceMatchesExhaustiveReference(t *testing.T) {
	const topologies, requestsEach = 1500, 24
	rng := rand.New(rand.NewPCG(20240601, 7))
	checked, fits, preferred := 0, 0, 0
	for i := range topologies {
		f := randomFixture(rng)
		snap, err := topology.FromFixture(f)
		require.NoError(t, err, "fixture %d", i)
		for range requestsEach {
			req := randomRequest(rng, f.Levels)
			want := referencePlace(f, req)
			got, err := snap.Place(req)
			require.NoError(t, err)
			if want != got {
				require.Equal(t, want, got, "topology %d, request %s\nfixture: %s", i, mustJSON(req), mustJSON(f))
			}
			checked++
			if got.FitsNow {
				fits++
			}
			if got.FitsNow && got.Level == req.PreferredLevel && req.PreferredLevel != req.RequiredLevel {
				preferred++
			}
		}
	}
	t.Logf("checked %d requests on %d random topologies against the exhaustive reference (%d fit now, %d at the preferred level)",
		checked, topologies, fits, preferred)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

const (
	refProductLabel = "nvidia.com/gpu.product"
	refHostname     = "kubernetes.io/hostname"
	refMIG          = "nvidia.com/mig-1g.10gb"
)

// randomFixture draws 1–12 nodes over 2–3 levels with small label alphabets
// (so names repeat under different parents), missing labels, one or two
// products, two resources and some unhealthy nodes.
func randomFixture(rng *rand.Rand) topology.Fixture {
	var f topology.Fixture
	nLevels := 2 + rng.IntN(2)
	for i := range nLevels {
		label := fmt.Sprintf("example.com/l%d", i)
		if i == nLevels-1 && rng.IntN(2) == 0 {
			label = refHostname
		}
		f.Levels = append(f.Levels, topology.Level{Name: fmt.Sprintf("level%d", i), NodeLabel: label})
	}
	products := []string{"p1", "p2"}[:1+rng.IntN(2)]
	for n := range 1 + rng.IntN(12) {
		node := topology.FixtureNode{
			Name:        fmt.Sprintf("n%d", n),
			Labels:      map[string]string{},
			Allocatable: map[string]int{},
			Used:        map[string]int{},
			Unhealthy:   rng.IntN(10) == 0,
		}
		for _, l := range f.Levels {
			switch {
			case l.NodeLabel == refHostname && rng.IntN(4) == 0:
				node.Labels[l.NodeLabel] = []string{"h1", "h2"}[rng.IntN(2)]
			case l.NodeLabel == refHostname:
			case rng.IntN(5) == 0: // missing
			default:
				node.Labels[l.NodeLabel] = []string{"a", "b", "c"}[rng.IntN(3)]
			}
		}
		if rng.IntN(7) != 0 {
			node.Labels[refProductLabel] = products[rng.IntN(len(products))]
		}
		for _, r := range []string{"nvidia.com/gpu", refMIG} {
			if r == refMIG && rng.IntN(3) != 0 {
				continue
			}
			a := rng.IntN(9)
			node.Allocatable[r] = a
			node.Used[r] = rng.IntN(a + 1)
			if rng.IntN(3) == 0 {
				node.Used[r] = 0
			}
			if r == "nvidia.com/gpu" && rng.IntN(3) == 0 {
				// KAI-shared pods on the devices left: up to all of them.
				if left := a - node.Used[r]; left > 0 {
					node.SharedMilli = map[string]int{r: rng.IntN(left*1000 + 1)}
				}
			}
		}
		f.Nodes = append(f.Nodes, node)
	}
	return f
}

func randomRequest(rng *rand.Rand, levels []topology.Level) topology.Request {
	req := topology.Request{
		Pods:       1 + rng.IntN(5),
		GPUsPerPod: 1 + rng.IntN(9),
		Resource:   []string{"", "nvidia.com/gpu", refMIG}[rng.IntN(3)],
		Product:    []string{"", "", "p1", "p2", "p3"}[rng.IntN(5)],
	}
	if rng.IntN(25) == 0 {
		req.GPUsPerPod = 0
	}
	if rng.IntN(5) == 0 {
		// Shared pods, one device each: many pack onto a device.
		req.GPUsPerPod, req.GPUShareMilli, req.Pods = 1, []int{250, 300, 334, 500, 999, 1000}[rng.IntN(6)], 1+rng.IntN(24)
	}
	if rng.IntN(4) == 0 {
		req.Pods = 1
	}
	required := rng.IntN(len(levels)+1) - 1
	if required >= 0 {
		req.RequiredLevel = levels[required].Name
	}
	if rng.IntN(2) == 0 {
		p := required + rng.IntN(len(levels)-required)
		if p >= 0 {
			req.PreferredLevel = levels[p].Name
		}
	}
	return req
}

// refDomain is a domain found by the reference: its key and its nodes' free
// and allocatable GPUs of the wanted kind.
type refDomain struct {
	key         string
	free, alloc []int
	// devFree and devAlloc are the devices behind free and alloc when
	// those count slots of shared pods (several per device).
	devFree, devAlloc int
	// inRequired: every node has the required level's label.
	inRequired bool
}

// referencePlace answers req on f by brute force.
func referencePlace(f topology.Fixture, req topology.Request) topology.Result {
	if req.GPUsPerPod == 0 {
		return topology.Result{FitsNow: true, FitsEmpty: true, Score: 1}
	}
	resource := req.Resource
	if resource == "" {
		resource = "nvidia.com/gpu"
	}
	var nodes []topology.FixtureNode
	var res topology.Result
	for _, n := range f.Nodes {
		if n.Unhealthy || (req.Product != "" && n.Labels[refProductLabel] != req.Product) {
			continue
		}
		nodes = append(nodes, n)
		res.ClusterFree += refFree(n, resource)
		res.ClusterTotal += n.Allocatable[resource]
	}
	// Shared pods of one device each: a node's free device holds
	// 1000/share of them, so a pod is one slot of that many per device.
	perDevice := 1
	if req.GPUShareMilli > 0 {
		perDevice = 1000 / req.GPUShareMilli
	}
	requiredIdx := slices.IndexFunc(f.Levels, func(l topology.Level) bool { return l.Name == req.RequiredLevel })
	required := refDomains(f.Levels, nodes, requiredIdx, -1, resource)
	if req.RequiredLevel == "" {
		required = refDomains(nil, nodes, -1, -1, resource)
	}
	g, pods := req.GPUsPerPod, req.Pods
	scale := func(ds []refDomain) []refDomain {
		if perDevice == 1 {
			return ds
		}
		out := make([]refDomain, len(ds))
		for i, d := range ds {
			out[i] = refDomain{key: d.key, inRequired: d.inRequired, devFree: sum(d.free), devAlloc: sum(d.alloc)}
			for _, v := range d.free {
				out[i].free = append(out[i].free, v*perDevice)
			}
			for _, v := range d.alloc {
				out[i].alloc = append(out[i].alloc, v*perDevice)
			}
		}
		return out
	}
	required = scale(required)
	var largestSlots, bestNowSlots int
	for _, d := range required {
		if s := maxPods(d.alloc, g); s > largestSlots {
			largestSlots = s
			res.Largest = topology.DomainCapacity{Domain: d.key, Level: req.RequiredLevel, PodSlots: s, GPUs: d.gpus(d.alloc, d.devAlloc, perDevice)}
		}
		if s := maxPods(d.free, g); s > bestNowSlots {
			bestNowSlots = s
			res.BestNow = topology.DomainCapacity{Domain: d.key, Level: req.RequiredLevel, PodSlots: s, GPUs: d.gpus(d.free, d.devFree, perDevice)}
		}
		res.FitsEmpty = res.FitsEmpty || canFit(d.alloc, g, pods)
	}
	best, ok := refBestFit(required, g, pods)
	if !ok {
		return res
	}
	level := req.RequiredLevel
	if req.PreferredLevel != "" && req.PreferredLevel != req.RequiredLevel {
		p := slices.IndexFunc(f.Levels, func(l topology.Level) bool { return l.Name == req.PreferredLevel })
		var inside []refDomain
		for _, d := range scale(refDomains(f.Levels, nodes, p, requiredIdx, resource)) {
			if d.inRequired {
				inside = append(inside, d)
			}
		}
		if pb, ok := refBestFit(inside, g, pods); ok {
			best, level = pb, req.PreferredLevel
		}
	}
	free, need := sum(best.free), pods*g
	if perDevice > 1 {
		free, need = best.devFree, (pods+perDevice-1)/perDevice
	}
	res.FitsNow = true
	res.Domain, res.Level = best.key, level
	res.Score = float64(need) / float64(free)
	res.FreeAfter = free - need
	return res
}

// refFree is the node's free devices of resource: allocatable less those
// pods use whole and those its shared pods occupy, packed.
func refFree(n topology.FixtureNode, resource string) int {
	return n.Allocatable[resource] - n.Used[resource] - (n.SharedMilli[resource]+999)/1000
}

// gpus is a domain's GPUs: the sum of counts, or devices when the counts
// are shared-pod slots.
func (d refDomain) gpus(counts []int, devices, perDevice int) int {
	if perDevice > 1 {
		return devices
	}
	return sum(counts)
}

// refBestFit is the fitting domain with the fewest free GPUs, then the
// smallest key. Domains come sorted by key.
func refBestFit(domains []refDomain, g, pods int) (refDomain, bool) {
	var best refDomain
	found := false
	for _, d := range domains {
		if canFit(d.free, g, pods) && (!found || sum(d.free) < sum(best.free)) {
			best, found = d, true
		}
	}
	return best, found
}

// refDomains groups nodes by their label path down to level (-1 or no
// levels: one "cluster" domain), sorted by key.
func refDomains(levels []topology.Level, nodes []topology.FixtureNode, level, required int, resource string) []refDomain {
	byKey := map[string]*refDomain{}
	var keys []string
	for _, n := range nodes {
		key := "cluster"
		if len(levels) > 0 {
			var ok bool
			if key, ok = refKey(levels, n, level); !ok {
				continue
			}
		}
		d := byKey[key]
		if d == nil {
			d = &refDomain{key: key, inRequired: true}
			byKey[key] = d
			keys = append(keys, key)
		}
		d.free = append(d.free, refFree(n, resource))
		d.alloc = append(d.alloc, n.Allocatable[resource])
		if required >= 0 {
			if _, ok := refValue(levels[required], n); !ok {
				d.inRequired = false
			}
		}
	}
	slices.Sort(keys)
	out := make([]refDomain, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

func refKey(levels []topology.Level, n topology.FixtureNode, level int) (string, bool) {
	key := ""
	for i := 0; i <= level; i++ {
		v, ok := refValue(levels[i], n)
		if !ok {
			if i == level {
				return "", false
			}
			v = "_"
		}
		if i > 0 {
			key += "/"
		}
		key += v
	}
	return key, true
}

func refValue(l topology.Level, n topology.FixtureNode) (string, bool) {
	v := n.Labels[l.NodeLabel]
	if v == "" && l.NodeLabel == refHostname {
		v = n.Name
	}
	return v, v != ""
}

// canFit decides by backtracking whether pods pods of g GPUs each can be
// assigned to nodes with the given free GPUs. Pods are identical, so pods go
// to nodes in non-decreasing order; failed states are remembered.
func canFit(free []int, g, pods int) bool {
	type state struct{ node, left, pods int }
	failed := map[state]bool{}
	var try func(node, left, pods int) bool
	try = func(node, left, pods int) bool {
		if pods == 0 {
			return true
		}
		if node == len(free) || failed[state{node, left, pods}] {
			return false
		}
		if left >= g && try(node, left-g, pods-1) {
			return true
		}
		next := 0
		if node+1 < len(free) {
			next = free[node+1]
		}
		if try(node+1, next, pods) {
			return true
		}
		failed[state{node, left, pods}] = true
		return false
	}
	if len(free) == 0 {
		return pods == 0
	}
	return try(0, free[0], pods)
}

// maxPods is the largest number of pods canFit accepts.
func maxPods(free []int, g int) int {
	k := 0
	for canFit(free, g, k+1) {
		k++
	}
	return k
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
