package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Watch keeps the state current from the Node, Pod, Namespace and DRA
// ResourceSlice, DeviceClass, ResourceClaimTemplate and ResourceClaim
// informers of a cache (the
// manager's): each event updates one object; the DRA ones only when the
// API server serves resource.k8s.io/v1. The Pod informer may hold Pods or PodFacts
// (StripTransforms). Call it before the cache starts, or at any time
// after; the informers replay what they hold as adds.
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
			switch p := o.(type) {
			case *PodFacts:
				s.UpsertFacts(p)
			case *corev1.Pod:
				s.UpsertPod(p)
			}
		}, func(o any) {
			if p, ok := o.(client.Object); ok {
				s.DeletePod(p.GetNamespace(), p.GetName())
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
		{&resourcev1.ResourceSlice{}, func(o any) {
			if sl, ok := o.(*resourcev1.ResourceSlice); ok {
				s.UpsertSlice(ctx, sl)
			}
		}, func(o any) {
			if sl, ok := o.(*resourcev1.ResourceSlice); ok {
				s.DeleteSlice(ctx, sl.Name)
			}
		}},
		{&resourcev1.DeviceClass{}, func(o any) {
			if c, ok := o.(*resourcev1.DeviceClass); ok {
				s.UpsertDeviceClass(ctx, c)
			}
		}, func(o any) {
			if c, ok := o.(*resourcev1.DeviceClass); ok {
				s.DeleteDeviceClass(ctx, c.Name)
			}
		}},
		{&resourcev1.ResourceClaimTemplate{}, func(o any) {
			if t, ok := o.(*resourcev1.ResourceClaimTemplate); ok {
				s.UpsertTemplate(t)
			}
		}, func(o any) {
			if t, ok := o.(*resourcev1.ResourceClaimTemplate); ok {
				s.DeleteTemplate(t.Namespace, t.Name)
			}
		}},
		{&resourcev1.ResourceClaim{}, func(o any) {
			if c, ok := o.(*resourcev1.ResourceClaim); ok {
				s.UpsertClaim(c)
			}
		}, func(o any) {
			if c, ok := o.(*resourcev1.ResourceClaim); ok {
				s.DeleteClaim(c.Namespace, c.Name)
			}
		}},
	}
	for _, w := range watches {
		inf, err := informers.GetInformer(ctx, w.obj)
		if isDRA(w.obj) && meta.IsNoMatchError(err) {
			// An API server without DRA (resource.k8s.io/v1): no claim
			// holds devices, no slice publishes any.
			log.FromContext(ctx).Info("DRA not served: nodes count only their allocatable GPUs, pods only their extended resources", "kind", fmt.Sprintf("%T", w.obj))
			continue
		}
		if err != nil {
			return fmt.Errorf("unable to get the %T informer: %w", w.obj, err)
		}
		reg, err := inf.AddEventHandler(eventHandler(w.upsert, w.remove))
		if err != nil {
			return fmt.Errorf("unable to watch %T: %w", w.obj, err)
		}
		s.mu.Lock()
		s.handlers = append(s.handlers, reg.HasSynced)
		s.mu.Unlock()
	}
	return nil
}

// isDRA: obj is of the resource.k8s.io API, which an API server may not
// serve.
func isDRA(obj client.Object) bool {
	switch obj.(type) {
	case *resourcev1.ResourceClaim, *resourcev1.ResourceClaimTemplate, *resourcev1.ResourceSlice, *resourcev1.DeviceClass:
		return true
	}
	return false
}

// Synced says whether the state has taken in everything the informers
// Watch feeds it from listed at their start. An informer that has synced
// has stored its first listing; its events may still be on their way to
// the state, so a decision before Synced may see part of the cluster.
func (s *State) Synced() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, synced := range s.handlers {
		if !synced() {
			return false
		}
	}
	return true
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

// HeldPods is every pod the Pod informer of informers holds as PodFacts
// (a cache with StripTransforms), sorted by namespace and name, shared
// with the informer: callers only read them. ok is false when that
// informer holds anything else, or its store cannot be read.
func HeldPods(ctx context.Context, informers cache.Informers) (pods []*PodFacts, ok bool) {
	inf, err := informers.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, false
	}
	st, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, false
	}
	for _, o := range st.GetStore().List() {
		f, ok := o.(*PodFacts)
		if !ok {
			return nil, false
		}
		pods = append(pods, f)
	}
	slices.SortFunc(pods, func(a, b *PodFacts) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return pods, true
}
