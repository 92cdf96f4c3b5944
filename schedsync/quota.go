package schedsync

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Quota is one dimension of a tenant's quota as the schedulers get it: a
// resource (e.g. nvidia.com/gpu), the GPU product it is limited to ("" for
// any product), the guarantee and the ceiling.
type Quota struct {
	Resource   string
	Product    string
	Guaranteed int64
	Ceiling    int64
}

// Quotas maps a tenant's model quota onto scheduler resources, sorted by
// resource then product. It is the one place that reads the quota's shape.
// In the model, quota[r] is the budget of every product of r together and
// quota[r].products[p] a product's share of it; the schedulers get
// disjoint pools instead (Kueue flavors): one per product with its
// guarantee and ceiling, and the "any product" pool (Product "") with what
// the products do not guarantee and the resource's whole ceiling, which
// work that names no product may reach. So the guarantees of a resource sum
// to the model's, and the any pool's ceiling is the resource's (see
// quotaTotals).
func (s Spec) Quotas(tenant string) ([]Quota, error) {
	raw := s.Tenants[tenant].Quota
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	type limit struct {
		Guaranteed int64 `json:"guaranteed"`
		Ceiling    int64 `json:"ceiling"`
	}
	var byResource map[string]struct {
		limit
		Products map[string]limit `json:"products"`
	}
	if err := json.Unmarshal(raw, &byResource); err != nil {
		return nil, fmt.Errorf("mandate.model.tenants.%s.quota is malformed: %w", tenant, err)
	}
	out := make([]Quota, 0, len(byResource))
	for res, q := range byResource {
		if q.Guaranteed < 0 || q.Ceiling < q.Guaranteed {
			return nil, fmt.Errorf("mandate.model.tenants.%s.quota[%q]: want 0 <= guaranteed <= ceiling, got %d and %d",
				tenant, res, q.Guaranteed, q.Ceiling)
		}
		anyGuaranteed := q.Guaranteed
		for p, pq := range q.Products {
			if pq.Guaranteed < 0 || pq.Ceiling < pq.Guaranteed || pq.Ceiling > q.Ceiling {
				return nil, fmt.Errorf("mandate.model.tenants.%s.quota[%q].products[%q]: want 0 <= guaranteed <= ceiling <= %d, got %d and %d",
					tenant, res, p, q.Ceiling, pq.Guaranteed, pq.Ceiling)
			}
			anyGuaranteed -= pq.Guaranteed
			out = append(out, Quota{Resource: res, Product: p, Guaranteed: pq.Guaranteed, Ceiling: pq.Ceiling})
		}
		if anyGuaranteed < 0 {
			return nil, fmt.Errorf("mandate.model.tenants.%s.quota[%q].products guarantee %d more than the resource's %d",
				tenant, res, -anyGuaranteed, q.Guaranteed)
		}
		out = append(out, Quota{Resource: res, Guaranteed: anyGuaranteed, Ceiling: q.Ceiling})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Product < out[j].Product
	})
	return out, nil
}

// quotaTotals is a tenant's quota per resource, every product together,
// for the schedulers that do not tell products apart (Volcano, KAI): the
// guarantees summed over the pools, and the any pool's ceiling, which is
// the resource's.
func quotaTotals(qs []Quota) (guaranteed, ceiling map[string]int64) {
	guaranteed, ceiling = map[string]int64{}, map[string]int64{}
	for _, q := range qs {
		guaranteed[q.Resource] += q.Guaranteed
		if q.Product == "" {
			ceiling[q.Resource] = q.Ceiling
		}
	}
	return guaranteed, ceiling
}
