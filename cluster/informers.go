package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Watch keeps the state current from the Node, Pod and Namespace informers
// of a cache (the manager's): each event updates one object. Call it before
// the cache starts, or at any time after; the informers replay what they
// hold as adds.
func (s *State) Watch(ctx context.Context, informers cache.Informers) error {
	watches := []struct {
		obj    client.Object
		upsert func(any)
		remove func(any)
	}{
		{&corev1.Node{}, func(o any) {
			if n, ok := o.(*corev1.Node); ok {
				s.UpsertNode(n)
			}
		}, func(o any) {
			if n, ok := o.(*corev1.Node); ok {
				s.DeleteNode(n.Name)
			}
		}},
		{&corev1.Pod{}, func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				s.UpsertPod(p)
			}
		}, func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				s.DeletePod(p.Namespace, p.Name)
			}
		}},
		{&corev1.Namespace{}, func(o any) {
			if ns, ok := o.(*corev1.Namespace); ok {
				s.UpsertNamespace(ns)
			}
		}, func(o any) {
			if ns, ok := o.(*corev1.Namespace); ok {
				s.DeleteNamespace(ns.Name)
			}
		}},
	}
	for _, w := range watches {
		inf, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("unable to get the %T informer: %w", w.obj, err)
		}
		if _, err := inf.AddEventHandler(eventHandler(w.upsert, w.remove)); err != nil {
			return fmt.Errorf("unable to watch %T: %w", w.obj, err)
		}
	}
	return nil
}

// eventHandler turns informer events into upserts and removals. A delete
// missed while disconnected arrives as a tombstone holding the last state
// known.
func eventHandler(upsert, remove func(any)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, o any) { upsert(o) },
		DeleteFunc: func(o any) {
			if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = tomb.Obj
			}
			remove(o)
		},
	}
}
