package review

import (
	"context"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// GangDirectives returns the directives recorded on the controlling owner
// of a pod when that owner is a gang kind (workload.IsGangOwner) that was
// admitted, and the pod is one the owner was admitted for. ok is false for
// anything else, and the pod is then decided on its own: no Owners reader,
// not a pod, no such owner, an owner without directives, an owner that is
// gone or was replaced (UID mismatch), a pod asking for another GPU
// resource or more GPUs than any of the owner's pods, or a GPU pod beyond
// the owner's admitted GPU pod count (its pods counted and being admitted:
// cluster.State.ClaimGangPod, keyed like the pod's reservation). A tenant
// cannot add pods to its admitted gang by naming it as their owner.
func (s *Service) GangDirectives(ctx context.Context, obj *unstructured.Unstructured, req evaluator.Request) (evaluator.Directives, bool, error) {
	if s.Owners == nil || obj.GroupVersionKind() != workload.PodGVK {
		return evaluator.Directives{}, false, nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || !workload.IsGangOwner(ref) {
		return evaluator.Directives{}, false, nil
	}
	owner, err := s.readOwner(ctx, obj.GetNamespace(), ref)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return evaluator.Directives{}, false, nil
		}
		return evaluator.Directives{}, false, fmt.Errorf("unable to read owner %s %s/%s: %w", ref.Kind, obj.GetNamespace(), ref.Name, err)
	}
	if ref.UID != "" && owner.GetUID() != ref.UID {
		return evaluator.Directives{}, false, nil
	}
	d, ok, err := scheduler.RecordedDirectives(owner.GetAnnotations())
	if err != nil {
		return evaluator.Directives{}, false, fmt.Errorf("owner %s %s/%s: %w", ref.Kind, obj.GetNamespace(), ref.Name, err)
	}
	if !ok {
		return evaluator.Directives{}, false, nil
	}
	ns, err := s.namespace(ctx, obj.GetNamespace())
	if err != nil {
		return evaluator.Directives{}, false, err
	}
	admitted, err := s.admittedFor(ctx, ns.Labels[workload.LabelTenant], obj, owner, req)
	return d, admitted, err
}

// readOwner reads a pod's controller from OwnerCache when it holds it
// under the UID the pod names, else from Owners, within one read timeout.
func (s *Service) readOwner(ctx context.Context, namespace string, ref *metav1.OwnerReference) (*unstructured.Unstructured, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion(ref.APIVersion)
	owner.SetKind(ref.Kind)
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout())
	defer cancel()
	if s.OwnerCache != nil {
		// At most half the timeout: the API server must still be asked
		// in time when the cache cannot answer (its informer starting).
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

// admittedFor says whether pod, of tenant, fits the gang owner was
// admitted as: no more GPUs than the owner's largest pod, of the same
// resource, and, for a GPU pod, a free slot among the owner's GPU pods. An
// owner or pod that does not normalise is not a gang to join.
func (s *Service) admittedFor(ctx context.Context, tenant string, pod, owner *unstructured.Unstructured, req evaluator.Request) (bool, error) {
	pw, err := workload.Normalize(pod)
	if err != nil {
		return false, nil
	}
	if pw.TotalGPUs == 0 {
		return true, nil
	}
	ow, err := workload.Normalize(owner)
	if err != nil || pw.GPUResource != ow.GPUResource || pw.GPUsPerPod > ow.GPUsPerPod {
		return false, nil
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
		return false, fmt.Errorf("unable to claim a pod slot of %s %s/%s: %w", owner.GetKind(), owner.GetNamespace(), owner.GetName(), err)
	}
	return ok, nil
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
