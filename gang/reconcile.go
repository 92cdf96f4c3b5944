package gang

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// errForeignPodGroup is returned when the PodGroup a gang needs exists but
// is controlled by something else (typically a deleted workload of the same
// name whose group the garbage collector has not removed yet); the request
// is retried.
var errForeignPodGroup = errors.New("PodGroup is controlled by another object")

// reconciler keeps the PodGroup of the gangs of one kind.
type reconciler struct {
	// client writes PodGroups.
	client client.Client
	// reader reads workloads and PodGroups from the API server: the cache
	// holds only their metadata.
	reader client.Reader
	gvk    schema.GroupVersionKind
}

var _ reconcile.Reconciler = (*reconciler)(nil)

// Reconcile creates or updates the PodGroup of the gang req names when it
// was admitted for Volcano. Errors are retried with backoff, except those
// retrying cannot fix (unreadable directives, a workload Normalize rejects),
// which wait for the workload to change.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// The cached metadata decides whether the gang is Volcano's; only then
	// is the whole object read.
	m := metadataOf(r.gvk)
	if err := r.client.Get(ctx, req.NamespacedName, m); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(
			fmt.Errorf("unable to get %s %s: %w", r.gvk.Kind, req.NamespacedName, err))
	}
	if m.GetDeletionTimestamp() != nil || !isCandidate(r.gvk, m) {
		return reconcile.Result{}, nil // gone or going: the garbage collector takes its PodGroup
	}
	d, err := directivesOf(m)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	if d.Scheduler != scheduler.Volcano {
		return reconcile.Result{}, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.gvk)
	if err := r.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(
			fmt.Errorf("unable to get %s %s: %w", r.gvk.Kind, req.NamespacedName, err))
	}
	if obj.GetUID() != m.GetUID() || obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, fmt.Errorf("%s %s changed while reconciling; retrying", r.gvk.Kind, req.NamespacedName)
	}
	if d, err = directivesOf(obj); err != nil { // the live object's, in case the cache lags
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	if d.Scheduler != scheduler.Volcano {
		return reconcile.Result{}, nil
	}
	w, err := workload.Normalize(obj)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("unable to normalise %s %s: %w", r.gvk.Kind, req.NamespacedName, err))
	}
	owner := metav1.OwnerReference{
		APIVersion:         r.gvk.GroupVersion().String(),
		Kind:               r.gvk.Kind,
		Name:               obj.GetName(),
		UID:                obj.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && r.gvk == podGVK {
		// A pod of a controller that is no gang kind: its group is named
		// after that controller (scheduler.PodGroupName) and shared by all
		// its pods, so it goes with the controller, not with one pod.
		// No blockOwnerDeletion: that would need the right to delete the
		// controller, which Mandate does not ask for.
		owner = metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID,
			Controller: ptr.To(true)}
	}
	want := scheduler.PodGroup(w, d, owner, nil)
	op, err := r.apply(ctx, want, owner)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("unable to keep PodGroup %s/%s of %s %s: %w",
			want.GetNamespace(), want.GetName(), r.gvk.Kind, req.NamespacedName, err)
	}
	if op != "" {
		minMember, _, _ := unstructured.NestedInt64(want.Object, "spec", "minMember")
		log.Info("PodGroup "+op, "podGroup", want.GetName(), "minMember", minMember, "queue", d.Queue)
	}
	return reconcile.Result{}, nil
}

// directivesOf decodes the directives obj was admitted with.
func directivesOf(obj client.Object) (evaluator.Directives, error) {
	d, _, err := scheduler.RecordedDirectives(obj.GetAnnotations())
	if err != nil {
		return d, fmt.Errorf("%s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return d, nil
}

// apply creates want, or updates the existing PodGroup when the fields
// Mandate owns differ. It returns "created", "updated" or "" (no change).
func (r *reconciler) apply(ctx context.Context, want *unstructured.Unstructured, owner metav1.OwnerReference) (string, error) {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(podGroupGVK)
	err := r.reader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, want); err != nil {
			return "", fmt.Errorf("unable to create: %w", err)
		}
		return "created", nil
	case err != nil:
		return "", fmt.Errorf("unable to get: %w", err)
	}
	if c := metav1.GetControllerOfNoCopy(got); c != nil && c.UID != owner.UID {
		return "", fmt.Errorf("%w: %s %s (uid %s)", errForeignPodGroup, c.Kind, c.Name, c.UID)
	}
	if !merge(got, want, owner) {
		return "", nil
	}
	if err := r.client.Update(ctx, got); err != nil {
		return "", fmt.Errorf("unable to update: %w", err)
	}
	return "updated", nil
}
