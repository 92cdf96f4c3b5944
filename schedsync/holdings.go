package schedsync

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// count returns how many workloads (and child queues) queue q holds, as
// the sync integration of its scheduler counts them (Sync.Holds).
func (h *holdings) count(ctx context.Context, k Kind, q *unstructured.Unstructured) (int, error) {
	in, ok := syncOf(k.Scheduler)
	if !ok || in.Holds == nil {
		return 0, nil
	}
	return in.Holds(ctx, h.list, q)
}

// Lister lists every object of a kind (read once per Plan); nil when the
// kind is not served.
type Lister func(ctx context.Context, g schema.GroupVersionKind) ([]unstructured.Unstructured, error)

// countOf counts the objects of kind g that pred matches.
func countOf(ctx context.Context, list Lister, g schema.GroupVersionKind, pred func(u *unstructured.Unstructured) bool) (int, error) {
	items, err := list(ctx, g)
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

// str is the string at path in u, "" when absent.
func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

// sumOf adds up counts, stopping at the first error.
func sumOf(counts ...func() (int, error)) (int, error) {
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
