package review

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// HoldOf is the hold of a stored workload (ledger.Hold) under the
// active revision's model: see HoldOf.
func (s *Service) HoldOf(obj *unstructured.Unstructured) (ledger.Hold, bool) {
	decider := s.Decider
	if s.Source != nil {
		decider = s.Source()
	}
	return HoldOf(obj, modelOf(decider))
}

// HoldOf is the hold of a stored workload (ledger.Hold) under model m
// (its GPU memory mapping): what it was admitted to hold, from its
// recorded directives and its demand now, for as long as it runs. ok is
// false for an object Mandate did not admit (no recorded directives), a
// bare pod (it counts itself), or a link of a gang (its root holds): it
// holds nothing. A workload suspended, finished or being deleted, or one
// that does not normalise, has a hold without GPUs; so has a preemptible
// one whose scheduler owns its quota (Kueue: its pods count once it lets
// them run). A non-preemptible one of such a scheduler holds while it is
// suspended too (holdsQueued).
func HoldOf(obj *unstructured.Unstructured, m model.Model) (ledger.Hold, bool) {
	_, governed := workload.Lookup(obj.GroupVersionKind())
	if !governed || obj.GroupVersionKind() == workload.PodGVK {
		return ledger.Hold{}, false
	}
	if isLink(obj) {
		return ledger.Hold{}, false
	}
	d, admitted, err := scheduler.RecordedDirectives(obj.GetAnnotations())
	if err != nil || !admitted {
		return ledger.Hold{}, false
	}
	h := ledger.Hold{Namespace: obj.GetNamespace(), UID: string(obj.GetUID()), Generation: obj.GetGeneration(),
		Preemptible: d.Preemptible}
	if key := obj.GetAnnotations()[workload.AnnotationReservation]; ledger.IsRequestKey(h.Namespace, key) {
		h.RequestKey = key
	}
	live := holdsLive(obj)
	if scheduler.OwnsQuota(d.Scheduler) {
		live = holdsQueued(obj, d.Preemptible)
	}
	if !live {
		return h, true
	}
	w, err := workload.Normalize(obj)
	if err != nil {
		return h, true
	}
	mapGPUMemory(&w, m)
	h.GPUs = demandOf(w)
	return h, true
}

// holdsQueued says whether the hold of obj, a workload of a scheduler that
// owns its quota (Kueue), lives: for a non-preemptible one, from its
// admission until it finishes or is being deleted, suspended or not.
// Kueue keeps it suspended while it queues and suspends it again when it
// evicts it; Mandate granted it its guarantee at admission, and another
// workload of the tenant must not be granted the same GPUs meanwhile (two
// Jobs created back to back would both be non-preemptible beyond the
// guarantee). Its pods, once Kueue lets them run, count under the hold
// (ledger.Hold), not beside it. A preemptible one holds nothing: it is
// borrowed work, which Kueue's own quota (nominal quota and borrowing
// limit, which mandate sync renders from the same model) admits and
// evicts; Mandate counts its pods once they exist, as it counts every
// preemptible pod, and reserving for it while it queues would only keep
// other borrowed work of the tenant out of the ceiling for GPUs Kueue may
// never give it.
func holdsQueued(obj *unstructured.Unstructured, preemptible bool) bool {
	return !preemptible && !ended(obj)
}

// suspended says whether obj, of kind k, is suspended (its kind's suspend
// field true): it runs no pods and holds nothing until unsuspended, which
// is decided again (ChangeRaises).
func suspended(k workload.Kind, obj *unstructured.Unstructured) bool {
	if len(k.Suspend) == 0 {
		return false
	}
	v, _, _ := unstructured.NestedBool(obj.Object, k.Suspend...)
	return v
}

// demandOf is what an admitted workload's GPUs hold, per usage key: its
// GPU resource, or, for KAI-shared GPUs, their milli-GPUs
// (topology.SharedKey), as its pods are counted, and under the product's key
// too when it asks for one (topology.WithProduct): that product's quota is
// spent as well. Nil for a workload without GPUs.
func demandOf(w workload.Workload) map[string]int {
	if w.TotalGPUs == 0 || w.GPUResource == "" {
		return nil
	}
	gpus := map[string]int{w.GPUResource: w.TotalGPUs}
	if w.GPUFraction > 0 || w.GPUMemoryMiB > 0 {
		gpus = map[string]int{topology.SharedKey(w.GPUResource): int(w.TotalMilliGPUs)}
	}
	return topology.WithProduct(gpus, w.GPUProduct)
}

// isLink says whether obj is a link of a gang rather than its root (a
// JobSet's Job, a LeaderWorkerSet's StatefulSets, the worker StatefulSet
// a leader pod controls): its controller is a gang kind, or Mandate named
// its gang on it (workload.AnnotationGangOwner, which it strips from an
// object decided on its own). The gang's root holds, and the link's pods
// count against the root.
func isLink(obj *unstructured.Unstructured) bool {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && workload.IsGangOwner(ref) {
		return true
	}
	_, named := obj.GetAnnotations()[workload.AnnotationGangOwner]
	return named
}
