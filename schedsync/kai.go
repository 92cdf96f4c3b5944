package schedsync

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// KAI's resource of whole GPUs in a Queue is topology.DefaultGPUResource;
// other resources are not governed by Mandate there (-1: unlimited).
const kaiGPUResource = topology.DefaultGPUResource

func init() {
	Register(KAI, Sync{
		Render: func(s model.Model, c Cluster, o Options) ([]Object, error) { return kaiObjects(s) },
		Holds:  kaiHolds,
		// A KAI queue is closed by a GPU quota and limit of zero.
		Close: func(_ *unstructured.Unstructured, spec map[string]any) (map[string]any, error) {
			return nil, unstructured.SetNestedMap(spec, map[string]any{"quota": int64(0), "limit": int64(0), "overQuotaWeight": int64(0)},
				"resources", "gpu")
		},
	})
}

// kaiHolds counts the PodGroups in a KAI Queue and its child queues.
func kaiHolds(ctx context.Context, list Lister, q *unstructured.Unstructured) (int, error) {
	name := q.GetName()
	return sumOf(
		func() (int, error) {
			return countOf(ctx, list, facts.KAI.GroupKinds[0].GVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "queue") == name })
		},
		func() (int, error) {
			return countOf(ctx, list, KAIQueueKind.GVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "parentQueue") == name })
		})
}

// kaiObjects renders a KAI Queue per tenant and the Topology that the
// injected kai.scheduler/topology annotation names.
func kaiObjects(s model.Model) ([]Object, error) {
	var out []Object
	for _, name := range s.TenantNames() {
		qs := s.Pools(name)
		guaranteed, ceiling := quotaTotals(qs)
		t := s.Tenants[name]
		o := newObject(KAIQueueKind, "", s.QueueName(name), map[string]string{workload.LabelTenant: name})
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
