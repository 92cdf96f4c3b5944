package modelcheck

import (
	"fmt"
	"strings"

	"github.com/mandate-dev/mandate/model"
)

// checkQuota: per GPU resource, no tenant guarantees more than its ceiling,
// and the tenants a tenant limits directly (its nearest descendants with a
// quota for the resource) guarantee no more together than it does: a
// guarantee the parent cannot keep is no guarantee.
func checkQuota(d *model.Model, r *reporter) {
	type key struct{ tenant, resource string }
	children := map[key][]string{}
	for _, name := range tenantNames(d) {
		t := d.Tenants[name]
		for _, res := range sortedKeys(t.Quota) {
			q := t.Quota[res]
			if q.Guaranteed > q.Ceiling {
				r.add(path("tenants", name, "quota", res, "guaranteed"), "tenant %s guarantees %d %s, above its ceiling of %d: the guarantee is part of the ceiling",
					name, q.Guaranteed, res, q.Ceiling)
			}
			chain := d.Chain(name)
			if !rooted(d, name) || len(chain) < 2 {
				continue
			}
			// The nearest ancestor limiting the same resource.
			for _, a := range chain[1:] {
				if _, ok := d.Tenants[a].Quota[res]; ok {
					children[key{a, res}] = append(children[key{a, res}], name)
					break
				}
			}
		}
	}
	for _, name := range tenantNames(d) {
		t := d.Tenants[name]
		for _, res := range sortedKeys(t.Quota) {
			kids := children[key{name, res}]
			sum, parts := int64(0), make([]string, 0, len(kids))
			for _, c := range kids {
				g := d.Tenants[c].Quota[res].Guaranteed
				sum += g
				parts = append(parts, fmt.Sprintf("%s %d", c, g))
			}
			if own := t.Quota[res].Guaranteed; sum > own {
				r.add(path("tenants", name, "quota", res, "guaranteed"), "the tenants under %s guarantee %d %s together (%s), more than the %d %s guarantees: lower theirs or raise %s's",
					name, sum, res, strings.Join(parts, ", "), own, name, name)
			}
		}
	}
	checkProductQuota(d, r)
}
