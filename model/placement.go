package model

import (
	"maps"
	"slices"
	"sort"

	"github.com/mandate-dev/mandate/topology"
)

// NodePool is a named set of nodes a tenant may be confined to
// (topology.pools): the domains Domains of one topology Level (the values
// of that level's node label), or the nodes carrying every NodeLabels
// label. Guaranteed optionally says how many GPUs of each resource the pool
// offers its tenants at least (the model checker holds it to the pool's
// capacity where it has the cluster).
type NodePool struct {
	Level      string            `json:"level,omitempty"`
	Domains    []string          `json:"domains,omitempty"`
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	Guaranteed map[string]int    `json:"guaranteed,omitempty"`
	// Description is for people.
	Description string `json:"description,omitempty"`
}

// Placement is where a tenant's work may run (tenants.<t>.placement).
// Every field is inherited from the nearest ancestor that sets it, and a
// child may only narrow it: its pools lie within its parent's, its
// isolation is at least as wide.
type Placement struct {
	// Allowed names the pool the tenant's work is confined to; "" inherits.
	Allowed string `json:"allowed,omitempty"`
	// Preferred names a pool the scheduler should prefer; "" inherits.
	Preferred string `json:"preferred,omitempty"`
	// Isolation is a topology level (node, clique, block…): the work of
	// the tenant that sets it (with its descendants') never shares a
	// domain of that level with another tenant's; "" inherits.
	Isolation string `json:"isolation,omitempty"`
	// Classes maps a workload class (inference…) to the pool work of that
	// class is confined to, within Allowed.
	Classes map[string]string `json:"classes,omitempty"`
}

// PoolSelector is the node selector of the pool: node label → the values
// it may have (every label must match). ok is false for no such pool or a
// pool naming an unknown level.
func (m Model) PoolSelector(name string) (topology.PoolSelector, bool) {
	p, ok := m.Topology.Pools[name]
	if !ok {
		return nil, false
	}
	sel := topology.PoolSelector{}
	if p.Level != "" {
		i := slices.IndexFunc(m.Topology.Levels, func(l topology.Level) bool { return l.Name == p.Level })
		if i < 0 {
			return nil, false
		}
		sel[m.Topology.Levels[i].NodeLabel] = slices.Sorted(slices.Values(p.Domains))
	}
	for k, v := range p.NodeLabels {
		if have, ok := sel[k]; ok && !slices.Contains(have, v) {
			sel[k] = nil // the level's domains and the label contradict: no node
			continue
		}
		sel[k] = []string{v}
	}
	return sel, true
}

// PoolSelectors is every pool's node selector, for the cluster model.
func (m Model) PoolSelectors() map[string]topology.PoolSelector {
	if len(m.Topology.Pools) == 0 {
		return nil
	}
	out := make(map[string]topology.PoolSelector, len(m.Topology.Pools))
	for name := range m.Topology.Pools {
		if sel, ok := m.PoolSelector(name); ok {
			out[name] = sel
		}
	}
	return out
}

// PoolNames lists the pools, sorted.
func (m Model) PoolNames() []string {
	return slices.Sorted(maps.Keys(m.Topology.Pools))
}

// AllowedPool is the pool a tenant's work of class is confined to: the
// class's entry of the nearest tenant of its chain that has one, else the
// nearest allowed pool; from names the tenant whose rule it is and rule the
// field ("allowed" or "classes.<class>"). ok is false when no tenant of the
// chain confines it (it may run anywhere).
func (m Model) AllowedPool(tenant, class string) (pool, from, rule string, ok bool) {
	chain := m.Chain(tenant)
	if class != "" {
		for _, t := range chain {
			if p := m.Tenants[t].Placement.Classes[class]; p != "" {
				return p, t, "classes." + class, true
			}
		}
	}
	for _, t := range chain {
		if p := m.Tenants[t].Placement.Allowed; p != "" {
			return p, t, "allowed", true
		}
	}
	return "", "", "", false
}

// PreferredPool is the nearest preferred pool of the tenant's chain.
func (m Model) PreferredPool(tenant string) (pool, from string, ok bool) {
	for _, t := range m.Chain(tenant) {
		if p := m.Tenants[t].Placement.Preferred; p != "" {
			return p, t, true
		}
	}
	return "", "", false
}

// Isolation is the level a tenant's work is isolated at and the tenant
// that set it (the isolation unit: its subtree shares domains of that
// level with no other tenant); ok false when no tenant of its chain sets
// one.
func (m Model) Isolation(tenant string) (level, unit string, ok bool) {
	for _, t := range m.Chain(tenant) {
		if l := m.Tenants[t].Placement.Isolation; l != "" {
			return l, t, true
		}
	}
	return "", "", false
}

// PoolWithin reports whether every node of pool inner is a node of pool
// outer, as far as the model can tell without the cluster: the same pool,
// domains of one level that are a subset, or node labels that include
// outer's.
func (m Model) PoolWithin(inner, outer string) bool {
	if inner == outer {
		return true
	}
	in, iok := m.PoolSelector(inner)
	out, ook := m.PoolSelector(outer)
	if !iok || !ook {
		return false
	}
	for k, allowed := range out {
		have, ok := in[k]
		if !ok {
			return false
		}
		for _, v := range have {
			if !slices.Contains(allowed, v) {
				return false
			}
		}
	}
	return true
}

// TenantsInPool lists the tenants whose work is confined to pool (by
// their allowed pool, whatever their classes), sorted: the tenants a
// scheduler's pool must admit.
func (m Model) TenantsInPool(pool string) []string {
	var out []string
	for name := range m.Tenants {
		if p, _, _, ok := m.AllowedPool(name, ""); ok && p == pool {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
