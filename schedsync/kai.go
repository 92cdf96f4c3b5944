package schedsync

import "github.com/mandate-dev/mandate/model"

// KAI's resource of whole GPUs in a Queue; other resources are not
// governed by Mandate there (-1: unlimited).
const kaiGPUResource = "nvidia.com/gpu"

// kaiObjects renders a KAI Queue per tenant and the Topology that the
// injected kai.scheduler/topology annotation names.
func kaiObjects(s model.Model) ([]Object, error) {
	var out []Object
	for _, name := range s.TenantNames() {
		qs := s.Pools(name)
		guaranteed, ceiling := quotaTotals(qs)
		t := s.Tenants[name]
		o := newObject(KAIQueueKind, "", s.QueueName(name), map[string]string{LabelTenant: name})
		spec := map[string]any{
			"resources": map[string]any{
				"gpu": map[string]any{
					"quota":           guaranteed[kaiGPUResource],
					"limit":           ceiling[kaiGPUResource],
					"overQuotaWeight": max(guaranteed[kaiGPUResource], 1),
				},
				"cpu":    unlimited(),
				"memory": unlimited(),
			},
			"priority": int64(s.MaxTierValue(name)),
		}
		if t.Parent != "" {
			spec["parentQueue"] = s.QueueName(t.Parent)
		}
		if t.Description != "" {
			spec["displayName"] = name
		}
		o.Object["spec"] = spec
		out = append(out, o)
	}
	if s.Topology.Name != "" && len(s.Topology.Levels) > 0 {
		o := newObject(KAITopologyKind, "", s.Topology.Name, nil)
		var levels []any
		for _, l := range s.Topology.Levels {
			levels = append(levels, map[string]any{"nodeLabel": l.NodeLabel})
		}
		o.Object["spec"] = map[string]any{"levels": levels}
		out = append(out, o)
	}
	return out, nil
}

func unlimited() map[string]any {
	return map[string]any{"quota": int64(-1), "limit": int64(-1), "overQuotaWeight": int64(1)}
}
