package topology

import "math"

// Shortfall says why no domain of a request's required level has room for
// even one pod now, so that a message never names an empty domain: which
// domains were considered and how close the freest came.
type Shortfall struct {
	// Level is the required level ("" for the whole cluster).
	Level string `json:"level"`
	// Domains counts the level's domains with healthy GPUs of the wanted
	// kind: the ones considered.
	Domains int `json:"domains"`
	// Freest is the considered domain with the most free GPUs of the wanted
	// kind (ties to the smaller key); empty when none has a free GPU.
	Freest string `json:"freest"`
	// FreestGPUs are Freest's free GPUs, spread over its nodes.
	FreestGPUs int `json:"freestGPUs"`
	// FreestNodeGPUs is the most free GPUs of the wanted kind on any one
	// node of Freest: fewer than the pod's GPUs, or the pod would fit.
	FreestNodeGPUs int `json:"freestNodeGPUs"`
}

// Shortfall describes the required level of req as it is now: how many of
// its domains were considered and the freest of them. It walks the level's
// domains, so it is for the path where a gang does not fit, not for every
// query.
func (s *Snapshot) Shortfall(req Request) (Shortfall, error) {
	q, err := s.validate(req)
	if err != nil {
		return Shortfall{}, err
	}
	var out Shortfall
	v := s.aggs[q.agg]
	if v == nil {
		if q.required >= 0 {
			out.Level = s.levels[q.required].Name
		}
		return out, nil
	}
	if q.required < 0 {
		out.Domains = 1
		if v.clusterFree.sum > 0 {
			out.Freest, out.FreestGPUs, out.FreestNodeGPUs = ClusterDomain, v.clusterFree.sum, v.clusterFree.maxNode()
		}
		return out, nil
	}
	out.Level = s.levels[q.required].Name
	ascendAll(v.alloc[q.required], func(*entry) bool {
		out.Domains++
		return true
	})
	top, ok := maxSumBelow(v.free[q.required], math.MaxInt)
	if !ok || top == 0 {
		return out, nil
	}
	ascend(v.free[q.required], top, "", func(e *entry) bool {
		out.Freest, out.FreestGPUs, out.FreestNodeGPUs = e.key, e.sum, e.hist.maxNode()
		return false
	})
	return out, nil
}

// maxNode is the most GPUs counted on one node; 0 when none.
func (h hist) maxNode() int {
	if len(h.b) == 0 {
		return 0
	}
	return h.b[len(h.b)-1].gpus
}
