package modelcheck

import (
	"fmt"
	"strings"

	"github.com/mandate-dev/mandate/model"
)

// checkProductQuota: per GPU resource and product (quota[r].products[p]),
// no tenant guarantees more of a product than its ceiling of it, nor more
// of its products together than it guarantees of the resource (which
// covers every product: work of a product spends both), nor a product's
// ceiling above the resource's, which it could never reach; and the
// tenants a tenant limits directly for that product guarantee no more of
// it together than it does.
func checkProductQuota(d *model.Model, r *reporter) {
	type key struct{ tenant, resource, product string }
	children := map[key][]string{}
	for _, name := range tenantNames(d) {
		t := d.Tenants[name]
		for _, res := range sortedKeys(t.Quota) {
			q := t.Quota[res]
			sum, parts := int64(0), []string{}
			for _, p := range sortedKeys(q.Products) {
				pq := q.Products[p]
				at := func(field string) string { return path("tenants", name, "quota", res, "products", p, field) }
				if pq.Guaranteed > pq.Ceiling {
					r.add(at("guaranteed"), "tenant %s guarantees %d %s %s, above its ceiling of %d for that product: the guarantee is part of the ceiling",
						name, pq.Guaranteed, p, res, pq.Ceiling)
				}
				if pq.Ceiling > q.Ceiling {
					r.add(at("ceiling"), "tenant %s's ceiling of %d %s %s is above its ceiling of %d %s for every product together, so it can never be reached: lower it to at most %d",
						name, pq.Ceiling, p, res, q.Ceiling, res, q.Ceiling)
				}
				sum += pq.Guaranteed
				parts = append(parts, fmt.Sprintf("%s %d", p, pq.Guaranteed))
				// The nearest ancestor limiting the same product.
				chain := d.Chain(name)
				if !rooted(d, name) || len(chain) < 2 {
					continue
				}
				for _, a := range chain[1:] {
					if _, ok := d.Tenants[a].Quota[res].Products[p]; ok {
						k := key{a, res, p}
						children[k] = append(children[k], name)
						break
					}
				}
			}
			if sum > q.Guaranteed {
				r.add(path("tenants", name, "quota", res, "products"), "tenant %s guarantees %d %s per product together (%s), more than the %d it guarantees of the resource: product work spends the resource's guarantee too, so lower theirs or raise the resource's",
					name, sum, res, strings.Join(parts, ", "), q.Guaranteed)
			}
		}
	}
	for _, name := range tenantNames(d) {
		t := d.Tenants[name]
		for _, res := range sortedKeys(t.Quota) {
			for _, p := range sortedKeys(t.Quota[res].Products) {
				kids := children[key{name, res, p}]
				sum, parts := int64(0), make([]string, 0, len(kids))
				for _, c := range kids {
					g := d.Tenants[c].Quota[res].Products[p].Guaranteed
					sum += g
					parts = append(parts, fmt.Sprintf("%s %d", c, g))
				}
				if own := t.Quota[res].Products[p].Guaranteed; sum > own {
					r.add(path("tenants", name, "quota", res, "products", p, "guaranteed"), "the tenants under %s guarantee %d %s %s together (%s), more than the %d %s guarantees: lower theirs or raise %s's",
						name, sum, p, res, strings.Join(parts, ", "), own, name, name)
				}
			}
		}
	}
}
