package schedsync

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// The workload objects that live in queues (facts.Scheduler.GroupKinds).
var (
	volcanoPodGroupGVK = facts.Volcano.GroupKinds[0].GVK
	kaiPodGroupGVK     = facts.KAI.GroupKinds[0].GVK
	kueueWorkloadGVK   = facts.Kueue.GroupKinds[0].GVK
)

// holdings counts what a queue still holds: the PodGroups or Workloads in
// it and its child queues. Lists are read once per Plan.
type holdings struct {
	c     client.Client
	lists map[schema.GroupVersionKind][]unstructured.Unstructured
}

func (h *holdings) list(ctx context.Context, g schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	if items, ok := h.lists[g]; ok {
		return items, nil
	}
	if h.lists == nil {
		h.lists = map[schema.GroupVersionKind][]unstructured.Unstructured{}
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(g.GroupVersion().WithKind(g.Kind + "List"))
	err := h.c.List(ctx, l)
	if meta.IsNoMatchError(err) {
		// Not served: nothing of that kind can be in a queue.
		h.lists[g] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unable to list %s to see which queues hold workloads: %w", g.Kind, err)
	}
	h.lists[g] = l.Items
	return l.Items, nil
}

// count returns how many workloads (and child queues) queue q holds.
func (h *holdings) count(ctx context.Context, k Kind, q *unstructured.Unstructured) (int, error) {
	match := func(g schema.GroupVersionKind, pred func(u *unstructured.Unstructured) bool) (int, error) {
		items, err := h.list(ctx, g)
		if err != nil {
			return 0, err
		}
		n := 0
		for i := range items {
			if pred(&items[i]) {
				n++
			}
		}
		return n, nil
	}
	str := func(u *unstructured.Unstructured, path ...string) string {
		s, _, _ := unstructured.NestedString(u.Object, path...)
		return s
	}
	name := q.GetName()
	var counts []func() (int, error)
	switch k.GVK {
	case VolcanoQueueKind.GVK:
		counts = append(counts,
			func() (int, error) {
				return match(volcanoPodGroupGVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "queue") == name })
			},
			func() (int, error) {
				return match(VolcanoQueueKind.GVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "parent") == name })
			})
	case KAIQueueKind.GVK:
		counts = append(counts,
			func() (int, error) {
				return match(kaiPodGroupGVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "queue") == name })
			},
			func() (int, error) {
				return match(KAIQueueKind.GVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "parentQueue") == name })
			})
	case LocalQueueKind.GVK:
		ns := q.GetNamespace()
		counts = append(counts, func() (int, error) {
			return match(kueueWorkloadGVK, func(u *unstructured.Unstructured) bool {
				return u.GetNamespace() == ns && str(u, "spec", "queueName") == name
			})
		})
	case ClusterQueueKind.GVK:
		counts = append(counts, func() (int, error) {
			lqs, err := h.list(ctx, LocalQueueKind.GVK)
			if err != nil {
				return 0, err
			}
			feeds := map[string]bool{}
			for i := range lqs {
				if str(&lqs[i], "spec", "clusterQueue") == name {
					feeds[lqs[i].GetNamespace()+"/"+lqs[i].GetName()] = true
				}
			}
			return match(kueueWorkloadGVK, func(u *unstructured.Unstructured) bool {
				return str(u, "status", "admission", "clusterQueue") == name ||
					feeds[u.GetNamespace()+"/"+str(u, "spec", "queueName")]
			})
		})
	}
	total := 0
	for _, f := range counts {
		n, err := f()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
