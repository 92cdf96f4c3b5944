package schedsync

import "github.com/mandate-dev/mandate/model"

// quotaTotals is a tenant's quota per resource, every product together,
// for the schedulers that do not tell products apart (Volcano, KAI): the
// guarantees summed over the pools (model.Model.Pools), and the any
// pool's ceiling, which is the resource's.
func quotaTotals(qs []model.Pool) (guaranteed, ceiling map[string]int64) {
	guaranteed, ceiling = map[string]int64{}, map[string]int64{}
	for _, q := range qs {
		guaranteed[q.Resource] += q.Guaranteed
		if q.Product == "" {
			ceiling[q.Resource] = q.Ceiling
		}
	}
	return guaranteed, ceiling
}
