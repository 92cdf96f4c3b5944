package topology

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Fixture is a cluster written by hand, for Rego tests and demos: the levels
// and, per node, its labels and GPU counts. The mandate.placement builtin
// accepts it inline, so `opa test` is exact without a live cluster.
type Fixture struct {
	Levels []Level       `json:"levels"`
	Nodes  []FixtureNode `json:"nodes"`
	// Pools are the authority model's pools (Config.Pools).
	Pools map[string]PoolSelector `json:"pools,omitempty"`
}

// FixtureNode is one node of a Fixture. Allocatable and Used count GPUs by
// resource name (nvidia.com/gpu, nvidia.com/mig-…, amd.com/gpu). The GPU
// product is read from the nvidia.com/gpu.product label, and
// kubernetes.io/hostname defaults to Name. An Unhealthy node counts as no
// capacity.
type FixtureNode struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Allocatable map[string]int    `json:"allocatable"`
	Used        map[string]int    `json:"used"`
	// SharedMilli is the milli-GPUs KAI-shared pods take of a resource's
	// devices on the node: they occupy WholeGPUs(SharedMilli) devices.
	SharedMilli map[string]int `json:"sharedMilli,omitempty"`
	Unhealthy   bool           `json:"unhealthy"`
}

// FromFixture validates f and returns its snapshot. It rejects a fixture with
// an invalid level list, a node without a name or named twice, a label value
// Kubernetes would not accept, a resource that is not a GPU resource, a
// negative count, or more used than allocatable.
func FromFixture(f Fixture) (*Snapshot, error) {
	m, err := NewModel(Config{Levels: f.Levels, Pools: f.Pools})
	if err != nil {
		return nil, fmt.Errorf("invalid topology fixture: %w", err)
	}
	seen := make(map[string]int, len(f.Nodes))
	for i, n := range f.Nodes {
		if err := validateFixtureNode(n); err != nil {
			return nil, fmt.Errorf("invalid topology fixture: node %d (%q): %w", i, n.Name, err)
		}
		if j, dup := seen[n.Name]; dup {
			return nil, fmt.Errorf("invalid topology fixture: nodes %d and %d are both named %q", j, i, n.Name)
		}
		seen[n.Name] = i
		keys, masks := domainKeys(m.levels, n.Name, n.Labels)
		info := &nodeInfo{
			keys:    keys,
			masks:   masks,
			product: n.Labels[m.rules.productLabel],
			usable:  !n.Unhealthy,
			alloc:   positive(n.Allocatable),
			pools:   m.rules.poolsOf(n.Labels),
		}
		used := positive(n.Used)
		if used == nil {
			used = map[string]int{}
		}
		for r, v := range positive(n.SharedMilli) {
			used[SharedKey(r)] = v
		}
		m.setNode(n.Name, info, used)
	}
	return m.Snapshot(), nil
}

func validateFixtureNode(n FixtureNode) error {
	if n.Name == "" {
		return fmt.Errorf("name is empty")
	}
	if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
		return fmt.Errorf("name is not a valid node name: %s", errs[0])
	}
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		if errs := validation.IsValidLabelValue(n.Labels[k]); len(errs) > 0 {
			return fmt.Errorf("label %s=%q: %s", k, n.Labels[k], errs[0])
		}
	}
	for _, counts := range []struct {
		field string
		m     map[string]int
	}{{"allocatable", n.Allocatable}, {"used", n.Used}, {"sharedMilli", n.SharedMilli}} {
		for _, r := range slices.Sorted(maps.Keys(counts.m)) {
			if !IsGPUResource(r) {
				return fmt.Errorf("%s: %q is not a GPU resource (nvidia.com/gpu, nvidia.com/mig-*, amd.com/gpu)", counts.field, r)
			}
			if counts.m[r] < 0 {
				return fmt.Errorf("%s[%s] is %d, want 0 or more", counts.field, r, counts.m[r])
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(n.Used)) {
		if n.Used[r] > n.Allocatable[r] {
			return fmt.Errorf("used[%s] is %d, more than allocatable %d", r, n.Used[r], n.Allocatable[r])
		}
	}
	for _, r := range slices.Sorted(maps.Keys(n.SharedMilli)) {
		if r != SharedResource {
			return fmt.Errorf("sharedMilli: %q is not %s, the resource KAI shares", r, SharedResource)
		}
		if devices := n.Used[r] + WholeGPUs(n.SharedMilli[r]); devices > n.Allocatable[r] {
			return fmt.Errorf("used[%s] and sharedMilli[%s] occupy %d devices, more than allocatable %d", r, r, devices, n.Allocatable[r])
		}
	}
	return nil
}

// positive returns the entries of m above zero; nil when there are none.
func positive(m map[string]int) map[string]int {
	var out map[string]int
	for k, v := range m {
		if v > 0 {
			if out == nil {
				out = make(map[string]int, len(m))
			}
			out[k] = v
		}
	}
	return out
}
