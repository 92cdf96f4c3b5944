package review

import (
	"context"
	"encoding/json"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// GangDirectives returns the directives recorded on the gang owner of obj
// — the topmost governed gang kind (workload.IsGangOwner) with recorded
// directives up obj's chain of controllers — when obj is a pod, or an
// object of a governed kind, that the owner was admitted for. The chain
// passes through the links kinds' controllers create between a gang and its
// pods (gangLinks: a Deployment's ReplicaSets, a LeaderWorkerSet's leader
// pods, and governed kinds such as a JobSet's Jobs or a TrainJob's JobSet),
// each read and matched by UID. ok is false for anything else, and obj is
// then decided on its own: no Owners reader, no such owner, an owner
// without directives, an owner that is gone or was replaced (UID
// mismatch), an object asking for another GPU resource or more GPUs per
// pod than any of the owner's pods, or a GPU pod beyond the owner's
// admitted GPU pod count (its pods counted and being admitted:
// cluster.State.ClaimGangPod, keyed like the pod's reservation). A tenant
// cannot add pods to its admitted gang by naming it as their owner, and an
// object between the gang and its pods (a child Job) is never counted: its
// pods are, once, against the gang's slots.
func (s *Service) GangDirectives(ctx context.Context, obj *unstructured.Unstructured, req evaluator.Request) (evaluator.Directives, bool, error) {
	d, _, ok, err := s.gangDirectives(ctx, obj, req)
	return d, ok, err
}

// gangDirectives is GangDirectives with obj's workload when ok, normalised
// once for both the check and the render (renderGang).
func (s *Service) gangDirectives(ctx context.Context, obj *unstructured.Unstructured, req evaluator.Request) (evaluator.Directives, workload.Workload, bool, error) {
	var none workload.Workload
	if s.Owners == nil {
		return evaluator.Directives{}, none, false, nil
	}
	if _, governed := workload.Lookup(obj.GroupVersionKind()); !governed {
		return evaluator.Directives{}, none, false, nil
	}
	owner, d, ok, err := s.gangOwner(ctx, obj)
	if err != nil || !ok {
		return evaluator.Directives{}, none, false, err
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref.UID != owner.GetUID() {
		if d, err = withGangOwner(d, owner); err != nil {
			return evaluator.Directives{}, none, false, err
		}
	}
	ns, err := s.namespace(ctx, obj.GetNamespace())
	if err != nil {
		return evaluator.Directives{}, none, false, err
	}
	w, admitted, err := s.admittedFor(ctx, ns.Labels[workload.LabelTenant], obj, owner, req)
	return d, w, admitted, err
}

// withGangOwner is d with the annotation that names owner as the gang of
// an object whose direct controller is another (workload.AnnotationGangOwner).
func withGangOwner(d evaluator.Directives, owner *unstructured.Unstructured) (evaluator.Directives, error) {
	raw, err := json.Marshal(workload.Owner{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: string(owner.GetUID())})
	if err != nil {
		return d, fmt.Errorf("unable to name the gang owner: %w", err)
	}
	annotations := make(map[string]string, len(d.Annotations)+1)
	for k, v := range d.Annotations {
		annotations[k] = v
	}
	annotations[workload.AnnotationGangOwner] = string(raw)
	d.Annotations = annotations
	return d, nil
}

// maxOwnerChain bounds the controllers walked up from an object: the
// longest known chain is a LeaderWorkerSet's worker pod → worker
// StatefulSet → leader pod → leader StatefulSet → LeaderWorkerSet.
const maxOwnerChain = 6

// gangLinks are the kinds, not governed themselves, that a gang kind's
// controller puts between the gang and its pods.
var gangLinks = map[schema.GroupVersionKind]bool{
	workload.ReplicaSetGVK: true, // Deployment → ReplicaSet → Pod
	workload.PodGVK:        true, // LeaderWorkerSet leader pod → worker StatefulSet
}

// gangOwner walks obj's controllers (governed gang kinds and gangLinks,
// each read and matched by the UID the reference names) and returns the
// topmost one that is a gang kind with recorded directives.
func (s *Service) gangOwner(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, evaluator.Directives, bool, error) {
	var (
		root *unstructured.Unstructured
		d    evaluator.Directives
	)
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout())
	defer cancel()
	cur := obj
	for range maxOwnerChain {
		ref := metav1.GetControllerOfNoCopy(cur)
		if ref == nil {
			break
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			break
		}
		gvk := gv.WithKind(ref.Kind)
		if !gangLinks[gvk] && !workload.IsGangOwner(ref) {
			break
		}
		owner, err := s.readOwner(ctx, obj.GetNamespace(), ref)
		if err != nil {
			if apierrors.IsNotFound(err) {
				break
			}
			return nil, evaluator.Directives{}, false, fmt.Errorf("unable to read owner %s %s/%s: %w", ref.Kind, obj.GetNamespace(), ref.Name, err)
		}
		if ref.UID != "" && owner.GetUID() != ref.UID {
			break
		}
		if workload.IsGangOwner(ref) {
			rd, ok, err := scheduler.RecordedDirectives(owner.GetAnnotations())
			if err != nil {
				return nil, evaluator.Directives{}, false, fmt.Errorf("owner %s %s/%s: %w", ref.Kind, obj.GetNamespace(), ref.Name, err)
			}
			if ok {
				root, d = owner, rd
			}
		}
		cur = owner
	}
	return root, d, root != nil, nil
}

// readOwner reads a controller from OwnerCache when it holds it under the
// UID ref names, else from Owners. The cache gets at most half of what is
// left of ctx: the API server must still be asked in time when the cache
// cannot answer (its informer starting).
func (s *Service) readOwner(ctx context.Context, namespace string, ref *metav1.OwnerReference) (*unstructured.Unstructured, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion(ref.APIVersion)
	owner.SetKind(ref.Kind)
	if s.OwnerCache != nil {
		cctx, ccancel := context.WithTimeout(ctx, s.readTimeout()/2)
		err := s.OwnerCache.Get(cctx, key, owner)
		ccancel()
		if err == nil && (ref.UID == "" || owner.GetUID() == ref.UID) {
			return owner, nil
		}
	}
	return owner, s.Owners.Get(ctx, key, owner)
}

// DaemonSetPod says whether obj is a pod without GPUs whose controller is a
// DaemonSet that exists with the UID the pod names: such pods run one per
// node, outside any tenant's quota, and are admitted undecided. A pod that
// only claims a DaemonSet owner (the reference is the client's to write),
// or asks for GPUs, is decided like any other. False without an Owners
// reader.
func (s *Service) DaemonSetPod(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	if s.Owners == nil || obj.GroupVersionKind() != workload.PodGVK {
		return false, nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != "DaemonSet" || ref.APIVersion != "apps/v1" || ref.UID == "" {
		return false, nil
	}
	if w, err := workload.Normalize(obj); err != nil || w.TotalGPUs > 0 {
		return false, nil
	}
	ds := &unstructured.Unstructured{}
	ds.SetAPIVersion(ref.APIVersion)
	ds.SetKind(ref.Kind)
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout())
	defer cancel()
	if err := s.Owners.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, ds); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("unable to read owner DaemonSet %s/%s: %w", obj.GetNamespace(), ref.Name, err)
	}
	return ds.GetUID() == ref.UID, nil
}

// admittedFor says whether pod (or a link object), of tenant, fits the gang
// owner was admitted as: no more GPUs than the owner's largest pod, of the
// same resource, and, for a GPU pod, a free slot among the owner's GPU pods. An
// owner or pod that does not normalise is not a gang to join. pw is the
// pod's workload, when it normalises.
func (s *Service) admittedFor(ctx context.Context, tenant string, pod, owner *unstructured.Unstructured, req evaluator.Request) (pw workload.Workload, admitted bool, err error) {
	pw, err = workload.Normalize(pod)
	if err != nil {
		return pw, false, nil
	}
	if pw.TotalGPUs == 0 {
		return pw, true, nil
	}
	ow, err := workload.Normalize(owner)
	if err != nil || pw.GPUResource != ow.GPUResource || pw.GPUsPerPod > ow.GPUsPerPod {
		return pw, false, nil
	}
	if !holdsLive(owner) {
		// Its hold has ended (finished, suspended, being deleted): a pod
		// created now is decided on its own.
		return pw, false, nil
	}
	if pod.GroupVersionKind() != workload.PodGVK {
		// A link between the gang and its pods (a JobSet's Job): its pods
		// claim the gang's slots when they are created.
		return pw, true, nil
	}
	gpuPods := 0
	for _, r := range ow.Roles {
		if r.GPUsPerPod > 0 {
			gpuPods += r.Replicas
		}
	}
	key := podKey(pw, req)
	if req.DryRun {
		key = ""
	}
	ok, err := s.State.ClaimGangPod(ctx, tenant, string(owner.GetUID()), key, gpuPods)
	if err != nil {
		return pw, false, fmt.Errorf("unable to claim a pod slot of %s %s/%s: %w", owner.GetKind(), owner.GetNamespace(), owner.GetName(), err)
	}
	return pw, ok, nil
}

// podKey keys a workload's reservation and a pod's gang claim: the request
// key Mandate wrote on it at an earlier webhook call of the same create
// when it had no name yet (the API server calls each webhook with a uid of
// its own, names the object from its generateName in between, and may call
// /mutate again), else its name's, else this request's.
func podKey(w workload.Workload, req evaluator.Request) string {
	// Only a key of the workload's own namespace: one copied from another
	// namespace's object must not name, and release, its reservation.
	if key := w.Annotations[workload.AnnotationReservation]; ledger.IsRequestKey(w.Namespace, key) {
		return key
	}
	if w.Name != "" {
		return ledger.WorkloadKey(w.APIVersion, w.Kind, w.Namespace, w.Name)
	}
	return ledger.RequestKey(w.Namespace, req.UID)
}

// RenderGang is the object, and the patch, that admits a pod of an admitted gang with the
// directives its owner was admitted with: never re-decided, so never
// counted twice nor denied on its own. A pod without a name yet carries its
// request's key (workload.AnnotationReservation), with which its stored
// version confirms its gang claim. Errors wrap workload.ErrInvalid when the
// pod cannot be read.
func RenderGang(obj *unstructured.Unstructured, d evaluator.Directives, req evaluator.Request) (*unstructured.Unstructured, []jsonpatch.JsonPatchOperation, error) {
	w, err := workload.Normalize(obj)
	if err != nil {
		return nil, nil, err
	}
	return renderGang(obj, w, d, req)
}

// renderGang is RenderGang of obj normalised as w.
func renderGang(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives, req evaluator.Request) (*unstructured.Unstructured, []jsonpatch.JsonPatchOperation, error) {
	mutated, err := scheduler.Render(obj, w, d)
	if err != nil {
		return nil, nil, fmt.Errorf("the owner's directives: %w", err)
	}
	mark := ""
	if key := podKey(w, req); ledger.IsRequestKey(w.Namespace, key) && !req.DryRun {
		mark = key
	}
	if err := scheduler.MarkReservation(mutated, w, mark); err != nil {
		return nil, nil, err
	}
	patch, err := scheduler.Patch(obj, mutated)
	return mutated, patch, err
}

// Stored reads the stored object of kind gvk (through Owners): what an
// UPDATE of its scale subresource changes. nil when it does not exist or
// there is no Owners reader.
func (s *Service) Stored(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if s.Owners == nil {
		return nil, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout())
	defer cancel()
	if err := s.Owners.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("unable to read %s %s/%s: %w", gvk.Kind, namespace, name, err)
	}
	return obj, nil
}

// holdsLive says whether the gang owner's hold lives: it is not being
// deleted, suspended or finished (HoldOf).
func holdsLive(owner *unstructured.Unstructured) bool {
	if ended(owner) {
		return false
	}
	k, ok := workload.Lookup(owner.GroupVersionKind())
	return !ok || !suspended(k, owner)
}

// ended says whether obj is being deleted or, by its kind's rule, finished:
// nothing it was admitted for runs again.
func ended(obj *unstructured.Unstructured) bool {
	if obj.GetDeletionTimestamp() != nil {
		return true
	}
	k, ok := workload.Lookup(obj.GroupVersionKind())
	return ok && k.Finished.IsFinished(obj)
}
