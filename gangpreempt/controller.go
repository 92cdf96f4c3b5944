// Package gangpreempt keeps a gang whole when a scheduler preempts part of
// it. The default kube-scheduler picks preemption victims pod by pod, so it
// may evict one pod of a multi-pod gang Mandate admitted and leave the
// others holding their GPUs for a gang that can no longer run. This
// controller watches the pods serve's informer already holds (the
// PodFacts of package cluster, which keep Mandate's marks and when a
// scheduler marked a pod as a victim: cluster.PreemptedAt) and, when a
// pod of a gang is marked, deletes the gang's other pods that were bound
// before the mark, at once, so their GPUs are free for the preemptor and
// the gang's controller starts the gang again whole. A gang that is not
// broken keeps its pods: an elastic gang whose members at the mark still
// run its recorded minimum (GangMin), or a gang whose marked pod the
// eviction guard protects (evictguard.Protected: the mark can pass while
// the guard does not answer, its failurePolicy being Ignore, and the
// guard then refuses the DELETE; had that passed, the pod is going, and
// its update asks for the gang again).
//
// The 1.36 kube-scheduler has its own workload-aware preemption
// (WorkloadAwarePreemption, with GangScheduling and GenericWorkload), but
// all three are alpha and off by default and need the alpha scheduling
// API served, which clusters do not run; Mandate cannot rely on them.
//
// Which pods form a gang is read only from what Mandate recorded when it
// admitted them: pods with recorded directives (scheduler.AnnotationDirectives,
// which the validating webhook keeps unchanged) naming a gang of more than
// one pod (GangMin), of the same namespace, whose gang owner
// (ledger.GangOwnerOf: the owner Mandate named, else the controller) has
// the same UID. Never a tenant's label: the worst a pod's own owner
// references can do is name its own namespace's pods, which its tenant may
// delete anyway.
package gangpreempt

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evictguard"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/scheduler"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "gang-whole"

// Setup registers the controller with mgr, whose cache holds Pods as
// cluster.PodFacts (cluster.StripTransforms). Pods are read, and deleted,
// through the API server (mgr.GetAPIReader), once per preempted gang.
func Setup(ctx context.Context, mgr manager.Manager) error {
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("unable to get the pod informer: %w", err)
	}
	r := &Reconciler{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient()}
	err = ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(&source.Informer{Informer: inf, Handler: handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				enqueue(q, nil, e.Object)
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				enqueue(q, e.ObjectOld, e.ObjectNew)
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				enqueue(q, nil, e.Object)
			},
		}}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("unable to set up the %s controller: %w", ControllerName, err)
	}
	return nil
}

// enqueue asks for the gang of cur when cur is a gang pod a scheduler has
// just marked as a victim (old, when known, was not), or a marked one
// that has just started going (a victim the eviction guard protects
// counts as running until then: runs).
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], old, cur client.Object) {
	f, ok := cur.(*cluster.PodFacts)
	if !ok || f.PreemptedAt == nil {
		return
	}
	if o, ok := old.(*cluster.PodFacts); ok && o.PreemptedAt != nil && (o.DeletionTimestamp != nil || f.DeletionTimestamp == nil) {
		return
	}
	owner, ok := gangOf(f.Annotations, f.Pod())
	if !ok {
		return
	}
	at := f.PreemptedAt.Time
	if at.IsZero() {
		at = time.Now()
	}
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: f.Namespace, Name: key(owner, at)}})
}

// key names one preemption of a gang: the owner's UID and the second of
// the mark.
func key(ownerUID string, at time.Time) string {
	return ownerUID + "@" + strconv.FormatInt(at.Unix(), 10)
}

func parseKey(k string) (string, time.Time, error) {
	uid, sec, ok := strings.Cut(k, "@")
	n, err := strconv.ParseInt(sec, 10, 64)
	if !ok || err != nil || uid == "" {
		return "", time.Time{}, fmt.Errorf("not a gang preemption key: %q", k)
	}
	return uid, time.Unix(n, 0), nil
}

// gangOf is the gang owner's UID of a pod Mandate admitted as part of a
// gang of more than one pod; ok is false for any other pod.
func gangOf(annotations map[string]string, pod *corev1.Pod) (string, bool) {
	uid, _, ok := gangMinOf(annotations, pod)
	return uid, ok
}

// gangMinOf is gangOf with the gang's minimum, the pods it needs to run
// (recorded: an elastic gang's minimum, else all of it).
func gangMinOf(annotations map[string]string, pod *corev1.Pod) (string, int, bool) {
	d, admitted, err := scheduler.RecordedDirectives(annotations)
	if err != nil || !admitted || d.GangMin < 2 {
		return "", 0, false
	}
	owner := ledger.GangOwnerOf(pod)
	if owner == nil || owner.UID == "" {
		return "", 0, false
	}
	return owner.UID, d.GangMin, true
}

// Reconciler deletes the rest of a gang one of whose pods a scheduler
// preempted.
type Reconciler struct {
	// Reader lists a namespace's pods (the API server: the cache holds
	// PodFacts only).
	Reader client.Reader
	// Writer deletes them.
	Writer client.Writer
}

// runs says whether pod, of a gang a scheduler marked at at, still runs
// for it: bound, not finished, not going, a member at the mark, and not a
// victim. A pod the eviction guard protects is no victim even when
// marked: its mark can pass while the guard does not answer (its
// failurePolicy is Ignore), but then the guard refuses the DELETE that
// follows, and the pod stays, with its gang. Had the DELETE passed too,
// the pod is going.
func runs(pod *corev1.Pod, at time.Time) bool {
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" || pod.CreationTimestamp.After(at) ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return cluster.PreemptedAt(pod) == nil || evictguard.Protected(pod)
}

// Reconcile deletes, of the gang req names (namespace and
// key(owner UID, time of the mark)), every pod that is bound, not being
// deleted, and was created no later than the mark: the pods the broken
// gang holds GPUs with. Pods its controller created since (the gang
// starting again) are left alone, and neither count as the gang's
// running members. A gang whose members at the mark still run its
// minimum (an elastic gang that lost pods above it) is not broken, and
// keeps its pods.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	owner, at, err := parseKey(req.Name)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	pods := &corev1.PodList{}
	if err := r.Reader.List(ctx, pods, client.InNamespace(req.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("unable to list the pods of %s: %w", req.Namespace, err)
	}
	log := ctrl.LoggerFrom(ctx)
	var gang []*corev1.Pod
	running, minimum := 0, 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		uid, n, ok := gangMinOf(pod.Annotations, pod)
		if !ok || uid != owner {
			continue
		}
		gang, minimum = append(gang, pod), max(minimum, n)
		if runs(pod, at) {
			running++
		}
	}
	if len(gang) == 0 {
		return reconcile.Result{}, nil
	}
	if running >= minimum {
		log.Info("a scheduler preempted pods of an elastic gang above its minimum: the gang still runs", "namespace", req.Namespace,
			"owner", owner, "running", running, "minimum", minimum)
		return reconcile.Result{}, nil
	}
	var deleted []string
	for _, pod := range gang {
		if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" || pod.CreationTimestamp.After(at) {
			continue
		}
		err := r.Writer.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return reconcile.Result{}, fmt.Errorf("unable to delete pod %s/%s of a preempted gang: %w", pod.Namespace, pod.Name, err)
		}
		deleted = append(deleted, pod.Name)
	}
	if len(deleted) > 0 {
		log.Info("a scheduler preempted part of a gang: deleted the rest", "namespace", req.Namespace,
			"owner", owner, "markedAt", metav1.NewTime(at), "pods", deleted)
	}
	return reconcile.Result{}, nil
}
