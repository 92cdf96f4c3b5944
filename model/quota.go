package model

import (
	"sort"
)

// Quota is a tenant's quota of one GPU resource: the budget of every
// product of the resource together, and per GPU product (the value of the
// node label nvidia.com/gpu.product) a product's share of it.
type Quota struct {
	// Guaranteed GPUs the tenant's non-preemptible work may use (with its
	// descendants'); Ceiling the most its work may use at all.
	Guaranteed int64 `json:"guaranteed"`
	Ceiling    int64 `json:"ceiling"`
	// Products is the quota per GPU product of the resource.
	Products map[string]Limit `json:"products,omitempty"`
}

// Limit is a guarantee and a ceiling: a GPU product's quota.
type Limit struct {
	Guaranteed int64 `json:"guaranteed"`
	Ceiling    int64 `json:"ceiling"`
}

// Limit is the quota of product ("" for the resource, every product
// together); ok false when the quota names no such product.
func (q Quota) Limit(product string) (Limit, bool) {
	if product == "" {
		return Limit{Guaranteed: q.Guaranteed, Ceiling: q.Ceiling}, true
	}
	l, ok := q.Products[product]
	return l, ok
}

// QuotaOf is a tenant's own quota of resource and product ("" for the
// resource, every product together); ok false when the model sets none
// (the tenant is limited by its ancestors' only).
func (m Model) QuotaOf(tenant, resource, product string) (Limit, bool) {
	q, ok := m.Tenants[tenant].Quota[resource]
	if !ok {
		return Limit{}, false
	}
	return q.Limit(product)
}

// Resources lists the GPU resources a tenant's own quota names, sorted.
func (m Model) Resources(tenant string) []string {
	return sortedKeys(m.Tenants[tenant].Quota)
}

// Products lists the GPU products a tenant's quota of resource names,
// sorted.
func (m Model) Products(tenant, resource string) []string {
	return sortedKeys(m.Tenants[tenant].Quota[resource].Products)
}

// Pool is one dimension of a tenant's quota as the schedulers get it: a
// resource (e.g. nvidia.com/gpu), the GPU product it is limited to ("" for
// any product), the guarantee and the ceiling.
type Pool struct {
	Resource   string
	Product    string
	Guaranteed int64
	Ceiling    int64
}

// Pools maps a tenant's quota onto disjoint pools, sorted by resource then
// product. In the model, quota[r] is the budget of every product of r
// together and quota[r].products[p] a product's share of it; the
// schedulers get disjoint pools instead (Kueue flavors): one per product
// with its guarantee and ceiling, and the "any product" pool (Product "")
// with what the products do not guarantee and the resource's whole
// ceiling, which work that names no product may reach. So the guarantees
// of a resource's pools sum to the model's, and the any pool's ceiling is
// the resource's. The model checker has made sure the products guarantee
// no more than the resource.
func (m Model) Pools(tenant string) []Pool {
	quota := m.Tenants[tenant].Quota
	out := make([]Pool, 0, len(quota))
	for _, res := range sortedKeys(quota) {
		q := quota[res]
		anyGuaranteed := q.Guaranteed
		for _, p := range sortedKeys(q.Products) {
			pq := q.Products[p]
			anyGuaranteed -= pq.Guaranteed
			out = append(out, Pool{Resource: res, Product: p, Guaranteed: pq.Guaranteed, Ceiling: pq.Ceiling})
		}
		out = append(out, Pool{Resource: res, Guaranteed: anyGuaranteed, Ceiling: q.Ceiling})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Product < out[j].Product
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
