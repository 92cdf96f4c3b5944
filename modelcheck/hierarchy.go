package modelcheck

import (
	"slices"
	"strings"

	"github.com/mandate-dev/mandate/model"
)

// checkHierarchy: every parent is a tenant, no chain of parents loops, and
// no tenant is deeper than model.MaxDepth (a tenant and its ancestors),
// the depth every walk up the hierarchy stops at.
func checkHierarchy(d *model.Model, r *reporter) {
	names := tenantNames(d)
	for _, name := range names {
		p := d.Tenants[name].Parent
		if _, ok := d.Tenants[p]; p != "" && !ok {
			r.add(path("tenants", name, "parent"), "parent %q is not a tenant of the model (known tenants: %s); a root tenant has parent \"\"",
				p, strings.Join(names, ", "))
		}
	}
	reported := map[string]bool{} // cycles by their first tenant
	for _, name := range names {
		if cycle := cycleFrom(d, name); cycle != nil && !reported[cycle[0]] {
			reported[cycle[0]] = true
			r.add(path("tenants", cycle[0], "parent"), "tenants %s → %s form a cycle of parents; a hierarchy ends in a root tenant (parent \"\")",
				strings.Join(cycle, " → "), cycle[0])
		}
	}
	for _, name := range names {
		chain, rooted := d.Ancestry(name)
		if !rooted || len(chain) <= model.MaxDepth {
			continue
		}
		r.add(path("tenants", name, "parent"), "tenant %s is %d levels deep (%s); Mandate walks at most %d (a tenant and %d ancestors) for quota, priority classes and scheduler: attach it higher",
			name, len(chain), strings.Join(chain, " → "), model.MaxDepth, model.MaxDepth-1)
	}
}

// cycleFrom is the cycle of parents reached from name, starting at its
// smallest tenant and in parent order; nil when following parents from
// name ends at a root or an unknown tenant.
func cycleFrom(d *model.Model, name string) []string {
	index := map[string]int{}
	var walk []string
	for t := name; t != ""; t = d.Tenants[t].Parent {
		if _, ok := d.Tenants[t]; !ok {
			return nil
		}
		if i, seen := index[t]; seen {
			cycle := walk[i:]
			start := slices.Index(cycle, slices.Min(cycle))
			return append(append([]string(nil), cycle[start:]...), cycle[:start]...)
		}
		index[t] = len(walk)
		walk = append(walk, t)
	}
	return nil
}
