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
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// GangDirectives returns the directives recorded on the controlling owner
// of a pod when that owner is a gang kind (workload.IsGangOwner) that was
// admitted. ok is false for anything else: no Owners reader, not a pod, no
// such owner, an owner without directives, or an owner that is gone or was
// replaced (UID mismatch).
func (s *Service) GangDirectives(ctx context.Context, obj *unstructured.Unstructured) (evaluator.Directives, bool, error) {
	if s.Owners == nil || obj.GroupVersionKind() != workload.PodGVK {
		return evaluator.Directives{}, false, nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || !workload.IsGangOwner(ref) {
		return evaluator.Directives{}, false, nil
	}
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion(ref.APIVersion)
	owner.SetKind(ref.Kind)
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout())
	defer cancel()
	if err := s.Owners.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, owner); err != nil {
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
	return d, ok, nil
}

// RenderGang is the patch that admits a pod of an admitted gang with the
// directives its owner was admitted with: never re-decided, so never
// counted twice nor denied on its own. Errors wrap workload.ErrInvalid when
// the pod cannot be read.
func RenderGang(obj *unstructured.Unstructured, d evaluator.Directives) ([]jsonpatch.JsonPatchOperation, error) {
	w, err := workload.Normalize(obj)
	if err != nil {
		return nil, err
	}
	mutated, err := scheduler.Render(obj, w, d)
	if err != nil {
		return nil, fmt.Errorf("the owner's directives: %w", err)
	}
	return scheduler.Patch(obj, mutated)
}
