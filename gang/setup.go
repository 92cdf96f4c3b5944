// Package gang keeps, for Volcano, the one PodGroup Mandate owns per gang
// workload it admitted. The mutating webhook points the pods of every gang
// it sends to Volcano at a PodGroup named scheduler.PodGroupName and records
// the directives it admitted the workload with in the mandate.dev/directives
// annotation; this package's controllers watch the governed gang kinds
// (batch/v1 Job, Kubeflow PyTorchJob when its CRD is served, and bare Pods,
// each a gang of one) and create or update that PodGroup from those
// directives, owned by the workload so the garbage collector removes it with
// the workload. Volcano Jobs are left alone (Volcano's job controller keeps
// their PodGroup), as are pods whose controlling owner is a gang kind
// (their owner is the gang), KAI- and default-scheduled workloads (KAI's
// podgrouper builds its own groups). Pods of other controllers (a bare
// ReplicaSet) are each a gang of one that share one PodGroup named after,
// and owned by, their controller. A Deployment is a gang kind: its pods
// (past its ReplicaSets) share the Deployment's one group, which outlives
// rollouts — each new ReplicaSet's pods carry the same template
// annotation, so no ReplicaSet gets a group of its own.
//
// The watches hold only object metadata; the full object is read from the
// API server for the workloads that need a PodGroup. Dry-run requests need
// no care: a dry-run create never reaches the API server's storage, so no
// watch ever sees it.
package gang

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

var (
	podGVK      = workload.PodGVK
	podGroupGVK = schema.FromAPIVersionAndKind(scheduler.PodGroupAPIVersion, scheduler.PodGroupKind)
)

// Setup registers with mgr one controller per governed gang kind the API
// server serves: batch/v1 Job and v1 Pod always, kubeflow.org/v1 PyTorchJob
// when its CRD is installed. Nothing is registered when Volcano's PodGroup
// CRD is not served (there is no Volcano to keep groups for).
func Setup(mgr manager.Manager) error {
	log := mgr.GetLogger().WithName("gang")
	served, err := isServed(mgr, podGroupGVK)
	if err != nil {
		return err
	}
	if !served {
		log.Info("Volcano PodGroups are not served; not keeping PodGroups", "gvk", podGroupGVK.String())
		return nil
	}
	for _, kind := range workload.Kinds() {
		if kind.VolcanoNative {
			continue
		}
		gvk := kind.GVK
		served, err := isServed(mgr, gvk)
		if err != nil {
			return err
		}
		if !served {
			log.Info("kind not served; not watching it", "gvk", gvk.String())
			continue
		}
		if err := setupKind(mgr, gvk); err != nil {
			return err
		}
	}
	return nil
}

// isServed reports whether the API server serves gvk.
func isServed(mgr manager.Manager, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("unable to look up %s: %w", gvk, err)
}

func setupKind(mgr manager.Manager, gvk schema.GroupVersionKind) error {
	r := &reconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), gvk: gvk}
	// Only spec (generation), annotation and label changes can change the
	// PodGroup; status updates (pods run, jobs progress) are ignored.
	changed := predicate.Or(predicate.GenerationChangedPredicate{},
		predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("gang-"+strings.ToLower(gvk.Kind)).
		For(metadataOf(gvk), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return isCandidate(gvk, o) }), changed)).
		// Owns cannot map a metadata-only owner type through the scheme.
		Watches(metadataOf(podGroupGVK), handler.EnqueueRequestsFromMapFunc(controllerOf(gvk)),
			builder.WithPredicates(changed)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("unable to set up the PodGroup controller for %s: %w", gvk, err)
	}
	return nil
}

// controllerOf maps a PodGroup to its controlling owner when that is of
// kind gvk, so a PodGroup edited or deleted by someone else is put back.
func controllerOf(gvk schema.GroupVersionKind) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		ref := metav1.GetControllerOfNoCopy(o)
		if ref == nil || ref.Kind != gvk.Kind || ref.APIVersion != gvk.GroupVersion().String() {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
	}
}

// metadataOf is a metadata-only object of gvk, so the cache keeps no specs.
func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// isCandidate is true for objects of kind gvk that may need a PodGroup:
// admitted by Mandate, and not a pod of a gang owner (its owner is the
// gang). A pod whose controller is no gang kind (a bare ReplicaSet's) was
// decided as a gang of one and pointed at a group named after that
// controller (scheduler.PodGroupName), which this controller keeps — but
// only when the pod names that group: a pod that names another one
// (a Deployment's pod, whose template the webhook pointed at the
// Deployment's group when it admitted the Deployment) belongs to the gang
// that group was made for, and a group of its ReplicaSet would hold no
// pod (Volcano shows it Inqueue, "0/0 tasks in gang unschedulable", one
// more per rollout).
func isCandidate(gvk schema.GroupVersionKind, o client.Object) bool {
	if _, ok, _ := scheduler.RecordedDirectives(o.GetAnnotations()); !ok {
		return false
	}
	if gvk != podGVK {
		return true
	}
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return true
	}
	if workload.IsGangOwner(ref) {
		return false
	}
	own := scheduler.PodGroupName(workload.Workload{Kind: podGVK.Kind, Name: o.GetName(), GenerateName: o.GetGenerateName(),
		Owner: &workload.Owner{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: string(ref.UID)}})
	return o.GetAnnotations()[scheduler.AnnotationGroupName] == own
}
