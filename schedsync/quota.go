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
// resource then product. It is the one place that reads the quota's shape:
// when the model's quota gains a per-product dimension, only this function
// changes, and every scheduler (Volcano resource lists, KAI gpu, Kueue
// flavors) follows.
func (s Spec) Quotas(tenant string) ([]Quota, error) {
	raw := s.Tenants[tenant].Quota
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var byResource map[string]struct {
		Guaranteed int64 `json:"guaranteed"`
		Ceiling    int64 `json:"ceiling"`
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
		out = append(out, Quota{Resource: res, Guaranteed: q.Guaranteed, Ceiling: q.Ceiling})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Product < out[j].Product
	})
	return out, nil
}

// quotaTotals sums a tenant's quota per resource over products.
func quotaTotals(qs []Quota) (guaranteed, ceiling map[string]int64) {
	guaranteed, ceiling = map[string]int64{}, map[string]int64{}
	for _, q := range qs {
		guaranteed[q.Resource] += q.Guaranteed
		ceiling[q.Resource] += q.Ceiling
	}
	return guaranteed, ceiling
}
