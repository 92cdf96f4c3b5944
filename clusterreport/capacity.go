package clusterreport

import (
	"sort"

	"github.com/mandate-dev/mandate/topology"
)

// gang is one blocked, admitted workload's demand: what stranded capacity
// is measured against.
type gang struct {
	pods, gpus        int
	resource, product string
	// level is its required level ("" anywhere).
	level string
}

func (g gang) wants(resource, product string) bool {
	return g.resource == resource && (g.product == "" || g.product == product)
}

// free is what n can still take of resource: nothing on a node out of the
// fit.
func (n node) free(resource string) int {
	if !n.view.Usable {
		return 0
	}
	return max(0, n.alloc[resource]-n.used[resource])
}

// capacity fills the capacity rows, the idle, stranded and unhealthy
// counts, and the heat map's domains. A free GPU is stranded when blocked
// gangs want its resource and product but none could use it: its node has
// fewer free than one pod needs, or its domain of the gang's required level
// has fewer pod slots than the gang has pods.
func capacity(rep *Report, nodes []node, gangs []gang, levels []topology.Level) {
	levelIndex := map[string]int{"": -1}
	for i, l := range levels {
		levelIndex[l.Name] = i
	}
	keyOf := func(n node, level int) string {
		if level < 0 {
			return topology.ClusterDomain
		}
		return n.view.Keys[level]
	}
	// slots[g][domain]: pods of gang g the domain's free GPUs hold.
	slots := make([]map[string]int, len(gangs))
	for i, g := range gangs {
		slots[i] = map[string]int{}
		li, ok := levelIndex[g.level]
		if !ok || g.gpus == 0 {
			continue
		}
		for _, n := range nodes {
			if g.wants(g.resource, n.view.Product) {
				slots[i][keyOf(n, li)] += n.free(g.resource) / g.gpus
			}
		}
	}
	type rk struct{ resource, product string }
	rows := map[rk]*CapacityRow{}
	for _, n := range nodes {
		for r, alloc := range n.alloc {
			k := rk{r, n.view.Product}
			row := rows[k]
			if row == nil {
				row = &CapacityRow{Resource: r, Product: n.view.Product}
				rows[k] = row
			}
			row.Total += alloc
			row.Used += n.used[r]
			switch {
			case n.view.Unhealthy:
				row.Unhealthy += alloc
			case !n.view.Usable:
				row.Unavailable += alloc
			}
			free := n.free(r)
			row.Free += free
			if free == 0 {
				continue
			}
			wanted, usable := false, false
			for i, g := range gangs {
				if !g.wants(r, n.view.Product) {
					continue
				}
				wanted = true
				li, ok := levelIndex[g.level]
				if ok && g.gpus > 0 && free >= g.gpus {
					if key := keyOf(n, li); key != "" && slots[i][key] >= g.pods {
						usable = true
						break
					}
				}
			}
			if wanted && !usable {
				row.Stranded += free
			}
		}
	}
	for _, row := range rows {
		rep.Capacity = append(rep.Capacity, *row)
		rep.IdleGPUs += row.Free
		rep.StrandedGPUs += row.Stranded
		rep.UnhealthyGPUs += row.Unhealthy
		rep.UnavailableGPUs += row.Unavailable
	}
	sort.Slice(rep.Capacity, func(i, j int) bool {
		a, b := rep.Capacity[i], rep.Capacity[j]
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Product < b.Product
	})
	heat := len(levels) - 2
	if heat < 0 {
		heat = 0
	}
	if len(levels) == 0 {
		return
	}
	rep.HeatLevel = levels[heat].Name
	doms := map[string]*DomainRow{}
	var keys []string
	for _, n := range nodes {
		key := n.view.Keys[heat]
		if key == "" {
			continue
		}
		d := doms[key]
		if d == nil {
			d = &DomainRow{Domain: key, Product: n.view.Product}
			doms[key] = d
			keys = append(keys, key)
		}
		for r, alloc := range n.alloc {
			d.Total += alloc
			d.Free += n.free(r)
			if n.view.Unhealthy {
				d.Unhealthy += alloc
			}
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		rep.Domains = append(rep.Domains, *doms[k])
	}
}
