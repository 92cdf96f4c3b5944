package modelcheck

import (
	"maps"
	"slices"
	"strings"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// checkPlacement: every pool names a level of the topology and selects
// something (a level's domains, node labels, not both contradicting);
// every tenant's placement names known pools and a known isolation level,
// and narrows what it inherits: its allowed pool lies within its parent's,
// its class pools and preferred pool within its own allowed pool, and its
// isolation is no narrower than its parent's.
func checkPlacement(d *model.Model, r *reporter) {
	levels := map[string]int{}
	var names []string
	for i, l := range d.Topology.Levels {
		levels[l.Name] = i
		names = append(names, l.Name)
	}
	known := strings.Join(names, ", ")
	for _, name := range d.PoolNames() {
		p := d.Topology.Pools[name]
		at := func(elems ...any) string { return path(append([]any{"topology", "pools", name}, elems...)...) }
		switch {
		case p.Level == "" && len(p.NodeLabels) == 0:
			r.add(at(), "pool %s selects no nodes: give it a level and domains, or nodeLabels", name)
		case p.Level != "" && len(p.Domains) == 0:
			r.add(at("domains"), "pool %s names level %s but no domains of it", name, p.Level)
		case p.Level == "" && len(p.Domains) > 0:
			r.add(at("level"), "pool %s lists domains but no level they are domains of", name)
		}
		if _, ok := levels[p.Level]; p.Level != "" && !ok {
			r.add(at("level"), "level %q is not a level of the topology (topology.levels: %s)", p.Level, known)
			continue
		}
		if sel, ok := d.PoolSelector(name); ok {
			for k, v := range sel {
				if v == nil {
					r.add(at("nodeLabels", k), "node label %s=%s contradicts the pool's %s domains (%s, the same label): no node is in the pool",
						k, p.NodeLabels[k], p.Level, strings.Join(p.Domains, ", "))
				}
			}
		}
	}
	for _, name := range d.TenantNames() {
		t := d.Tenants[name]
		pl := t.Placement
		at := func(elems ...any) string { return path(append([]any{"tenants", name, "placement"}, elems...)...) }
		knownPool := func(field, pool string, elems ...any) bool {
			if _, ok := d.Topology.Pools[pool]; !ok {
				r.add(at(elems...), "%s names pool %q, which topology.pools does not define (pools: %s)", field, pool, strings.Join(d.PoolNames(), ", "))
				return false
			}
			return true
		}
		// What the tenant inherits: its parent's effective placement.
		parentPool, parentFrom, _, parentConfined := "", "", "", false
		if t.Parent != "" {
			parentPool, parentFrom, _, parentConfined = d.AllowedPool(t.Parent, "")
		}
		if pl.Allowed != "" && knownPool("allowed", pl.Allowed, "allowed") && parentConfined && !d.PoolWithin(pl.Allowed, parentPool) {
			r.add(at("allowed"), "tenant %s is allowed pool %s, which is not within pool %s that %s confines it to: a child may only narrow its parent's placement",
				name, pl.Allowed, parentPool, parentFrom)
		}
		own, ownFrom, _, confined := d.AllowedPool(name, "")
		for _, class := range slices.Sorted(maps.Keys(pl.Classes)) {
			p := pl.Classes[class]
			if knownPool("classes."+class, p, "classes", class) && confined && !d.PoolWithin(p, own) {
				r.add(at("classes", class), "tenant %s's %s work is confined to pool %s, which is not within pool %s that %s confines it to",
					name, class, p, own, ownFrom)
			}
		}
		if pl.Preferred != "" && knownPool("preferred", pl.Preferred, "preferred") && confined && !d.PoolWithin(pl.Preferred, own) {
			r.add(at("preferred"), "tenant %s prefers pool %s, which is not within pool %s that %s confines it to: the preference could never be met",
				name, pl.Preferred, own, ownFrom)
		}
		if pl.Isolation != "" {
			i, ok := levels[pl.Isolation]
			if !ok {
				r.add(at("isolation"), "level %q is not a level of the topology (topology.levels: %s)", pl.Isolation, known)
				continue
			}
			if t.Parent != "" {
				if pLevel, unit, ok := d.Isolation(t.Parent); ok {
					if j, ok := levels[pLevel]; ok && i > j {
						r.add(at("isolation"), "tenant %s is isolated at %s, narrower than the %s isolation it inherits from %s: a child may only widen isolation",
							name, pl.Isolation, pLevel, unit)
					}
				}
			}
		}
	}
}

// CheckPools checks the model's pools against a cluster: a pool no node
// matches, and a pool's guarantee larger than the GPUs its healthy nodes
// have. Problems carry check "placement".
func CheckPools(m model.Model, s *topology.Snapshot) []Problem {
	r := &reporter{check: "placement"}
	for _, name := range m.PoolNames() {
		p := m.Topology.Pools[name]
		res, err := s.Place(topology.Request{Pods: 1, GPUsPerPod: 1, Pool: name})
		if err == nil && res.ClusterTotal == 0 && len(p.Guaranteed) == 0 {
			r.add(path("topology", "pools", name), "no node of the cluster with %s is in pool %s", topology.DefaultGPUResource, name)
		}
		for _, resource := range slices.Sorted(maps.Keys(p.Guaranteed)) {
			g := p.Guaranteed[resource]
			res, err := s.Place(topology.Request{Pods: 1, GPUsPerPod: 1, Resource: resource, Pool: name})
			if err != nil {
				r.add(path("topology", "pools", name, "guaranteed", resource), "%v", err)
				continue
			}
			if res.ClusterTotal == 0 {
				r.add(path("topology", "pools", name), "no node of the cluster with %s is in pool %s", resource, name)
			} else if g > res.ClusterTotal {
				r.add(path("topology", "pools", name, "guaranteed", resource), "pool %s guarantees %d %s, but its healthy nodes have only %d",
					name, g, resource, res.ClusterTotal)
			}
		}
	}
	return r.problems
}
