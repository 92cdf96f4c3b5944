package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/ledger"
)

// HoldOf reads the hold of a stored workload (review.Service.HoldOf); ok
// false when it holds none of its own.
type HoldOf func(obj *unstructured.Unstructured) (h ledger.Hold, ok bool)

// WatchHolds keeps the ledger's holds (ledger.Hold) from informers of the
// workload kinds given that the API server serves: each stored workload
// Mandate admitted holds its demand until it is deleted, suspended or
// finished, whatever its pods' timing. The informers are the manager
// cache's, shared with the reads of gang owners. The state is Synced only
// once they have been taken in, so a restarted replica counts every hold
// before it decides. A kind whose CRD is installed later is not watched
// until a restart.
func (s *State) WatchHolds(ctx context.Context, informers cache.Informers, mapper meta.RESTMapper, kinds []schema.GroupVersionKind, holdOf HoldOf) error {
	for _, gvk := range kinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				continue // not served: nothing of this kind holds
			}
			return fmt.Errorf("unable to map %s: %w", gvk, err)
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		inf, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("unable to get the %s informer: %w", gvk.Kind, err)
		}
		upsert := func(o any) {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return
			}
			key := ledger.WorkloadKey(u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
			if h, ok := holdOf(u); ok {
				s.ledger.UpsertHold(key, h)
			} else {
				s.ledger.DeleteHold(key)
			}
		}
		remove := func(o any) {
			if u, ok := o.(client.Object); ok {
				s.ledger.DeleteHold(ledger.WorkloadKey(gvk.GroupVersion().String(), gvk.Kind, u.GetNamespace(), u.GetName()))
			}
		}
		reg, err := inf.AddEventHandler(eventHandler(upsert, remove))
		if err != nil {
			return fmt.Errorf("unable to watch %s: %w", gvk.Kind, err)
		}
		s.mu.Lock()
		s.handlers = append(s.handlers, reg.HasSynced)
		s.mu.Unlock()
	}
	return nil
}

// LoadHolds counts the holds of listed workloads (a snapshot's or a live
// listing's) as the replicas' informers do (WatchHolds): for reports, not
// for deciding.
func (s *State) LoadHolds(objs []*unstructured.Unstructured, holdOf HoldOf) {
	for _, u := range objs {
		if h, ok := holdOf(u); ok {
			s.ledger.UpsertHold(ledger.WorkloadKey(u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()), h)
		}
	}
}

// UnloadHolds forgets the holds of listed workloads, as deleting them
// does (the simulator's departures).
func (s *State) UnloadHolds(objs []*unstructured.Unstructured) {
	for _, u := range objs {
		s.ledger.DeleteHold(ledger.WorkloadKey(u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()))
	}
}
